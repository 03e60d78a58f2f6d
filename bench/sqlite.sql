-- bench/sqlite.sql - an allocation-heavy sqlite3 session for the profiler bench.
-- Run as: sqlite3 :memory: < bench/sqlite.sql
-- Creates two tables, inserts 20k customers and 100k orders (recursive CTEs),
-- builds indexes, runs joins/aggregates, updates and deletes. Prints 4 lines.
PRAGMA cache_size = -65536;
CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, balance REAL);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, item TEXT, qty INTEGER, price REAL, note TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
INSERT INTO customers SELECT x, 'customer-' || x, 'city-' || (x * 7 % 97), ((x * 7919) % 10007) / 100.0 FROM c;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)
INSERT INTO orders SELECT x, (x * 31) % 20000 + 1, 'item-' || (x % 1013), x % 17 + 1,
       ((x * 104729) % 100000) / 100.0, 'note ' || printf('%.*c', x % 120, 'n') FROM c;
CREATE INDEX orders_customer ON orders(customer_id);
CREATE INDEX orders_item_price ON orders(item, price);
CREATE INDEX customers_city ON customers(city, name);
SELECT c.city, count(*), round(sum(o.qty * o.price), 2)
  FROM customers c JOIN orders o ON o.customer_id = c.id
 GROUP BY c.city ORDER BY 3 DESC LIMIT 1;
SELECT item, count(*), round(avg(price), 2) FROM orders
 GROUP BY item HAVING count(*) > 95 ORDER BY 3 DESC, 1 LIMIT 1;
UPDATE orders SET note = upper(note) || '-' || item WHERE id % 3 = 0;
DELETE FROM orders WHERE qty = 5;
CREATE TABLE summary AS
  SELECT customer_id, group_concat(item, ',') AS items, json_group_array(price) AS prices
    FROM orders GROUP BY customer_id;
SELECT count(*), sum(length(items)), sum(json_array_length(prices)) FROM summary;
SELECT count(*), sum(length(note)) FROM orders WHERE note GLOB 'NOTE*';
