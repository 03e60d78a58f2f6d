/* tags_phases.c - heaptrail.h's tags and phases with figures known by
 * construction (tests/e2e/test_tags_phases.py checks them exactly). No
 * stdio, so that libc allocates nothing of its own.
 *
 * Tags (no phase is open meanwhile):
 *   node  make_node_a: 6 x 48 B, make_node_b: 4 x 64 B = 10 blocks, 544 B;
 *         2 of make_node_a's freed: 8 live, 448 B
 *   edge  make_edges: 5 x 24 B; edge 4 realloc'd to 40 B (the new block
 *         keeps the tag: 6 allocations, 160 B); edge 0 freed: 4 live, 112 B
 *   plain 3 x 100 B never tagged, live at the end
 * Phases (nothing tagged inside, so all of it is untagged):
 *   parse   entered 3 times; each entry allocates 2 x 100 B and frees one:
 *           6 allocations, 600 B, net +300, peak inside 200
 *   compile entered once: 1000 B, then "emit" nested inside, then frees
 *           the 1000 B: 3 allocations, 1550 B (inclusive), net +50,
 *           peak inside 1500
 *   emit    inside compile: 500 B allocated and freed, 50 B kept:
 *           2 allocations, 550 B, net +50, peak inside 500
 * Untagged: 3 + 6 + 3 = 12 allocations, 300 + 600 + 1550 = 2450 B,
 * 3 + 3 + 1 = 7 live blocks, 300 + 300 + 50 = 650 B.
 */
#include <stdlib.h>

#include "heaptrail.h"

static void *nodes[10], *edges[5], *plain[3], *kept[4];

__attribute__((noinline)) static void *make_node_a(void)
{
	void *p = malloc(48); /* node_a */
	heaptrail_tag(p, "node");
	return p;
}

__attribute__((noinline)) static void *make_node_b(void)
{
	void *p = malloc(64); /* node_b */
	heaptrail_tag(p, "node");
	return p;
}

__attribute__((noinline)) static void make_edges(void)
{
	for (int i = 0; i < 5; i++) {
		edges[i] = malloc(24);
		heaptrail_tag(edges[i], "edge");
	}
	edges[4] = realloc(edges[4], 40);
	free(edges[0]);
}

__attribute__((noinline)) static void parse(int i)
{
	heaptrail_phase_begin("parse");
	void *a = malloc(100);
	kept[i] = malloc(100);
	free(a);
	heaptrail_phase_end("parse");
}

__attribute__((noinline)) static void emit(void)
{
	heaptrail_phase_begin("emit");
	void *a = malloc(500);
	free(a);
	kept[3] = malloc(50);
	heaptrail_phase_end("emit");
}

__attribute__((noinline)) static void compile(void)
{
	heaptrail_phase_begin("compile");
	void *big = malloc(1000);
	emit();
	free(big);
	heaptrail_phase_end("compile");
}

int main(void)
{
	for (int i = 0; i < 6; i++)
		nodes[i] = make_node_a();
	for (int i = 6; i < 10; i++)
		nodes[i] = make_node_b();
	free(nodes[0]);
	free(nodes[1]);
	make_edges();
	for (int i = 0; i < 3; i++)
		plain[i] = malloc(100);
	for (int i = 0; i < 3; i++)
		parse(i);
	compile();
	return 0; /* everything else is left live on purpose */
}
