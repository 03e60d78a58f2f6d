/* compress.c - zstd or gzip streams behind a FILE (compress.h), through
 * glibc's fopencookie, so that every writer writes to them as to a file
 * and the output never has to fit in memory. */
#include "cli/compress.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

typedef struct comp {
	FILE *raw;
	ht_comp_t kind;
	ZSTD_CCtx *zc;
	z_stream z;
	bool failed;
	unsigned char out[1 << 16];
} comp_t;

ht_comp_t ht_comp_for_path(const char *path)
{
	size_t n = path ? strlen(path) : 0;
	if ((n > 4 && !strcmp(path + n - 4, ".zst")) || (n > 5 && !strcmp(path + n - 5, ".zstd")))
		return HT_COMP_ZSTD;
	if (n > 3 && !strcmp(path + n - 3, ".gz"))
		return HT_COMP_GZIP;
	return HT_COMP_NONE;
}

static int put(comp_t *c, size_t len)
{
	if (len && fwrite(c->out, 1, len, c->raw) != len) {
		c->failed = true;
		return -1;
	}
	return 0;
}

/* Compress buf (finish: and end the stream). 0, or -1 with errno set. */
static int push(comp_t *c, const char *buf, size_t size, bool finish)
{
	if (c->kind == HT_COMP_ZSTD) {
		ZSTD_inBuffer in = { buf, size, 0 };
		for (;;) {
			ZSTD_outBuffer out = { c->out, sizeof c->out, 0 };
			size_t left = ZSTD_compressStream2(c->zc, &out, &in,
							   finish ? ZSTD_e_end : ZSTD_e_continue);
			if (ZSTD_isError(left)) {
				errno = EIO;
				return -1;
			}
			if (put(c, out.pos))
				return -1;
			if (finish ? left == 0 : in.pos == in.size)
				return 0;
		}
	}
	c->z.next_in = (Bytef *)buf;
	c->z.avail_in = (uInt)size;
	for (;;) {
		c->z.next_out = c->out;
		c->z.avail_out = sizeof c->out;
		int zr = deflate(&c->z, finish ? Z_FINISH : Z_NO_FLUSH);
		if (zr == Z_STREAM_ERROR) {
			errno = EIO;
			return -1;
		}
		if (put(c, sizeof c->out - c->z.avail_out))
			return -1;
		if (finish ? zr == Z_STREAM_END : c->z.avail_in == 0 && c->z.avail_out != 0)
			return 0;
	}
}

static ssize_t comp_write(void *cookie, const char *buf, size_t size)
{
	comp_t *c = cookie;
	/* a chunk zlib takes in one go: avail_in is 32 bits */
	size_t done = 0;
	while (done < size) {
		size_t n = size - done > (1u << 30) ? 1u << 30 : size - done;
		if (push(c, buf + done, n, false))
			return done ? (ssize_t)done : -1;
		done += n;
	}
	return (ssize_t)size;
}

static void comp_free(comp_t *c)
{
	if (c->kind == HT_COMP_ZSTD)
		ZSTD_freeCCtx(c->zc);
	else
		deflateEnd(&c->z);
	free(c);
}

static int comp_close(void *cookie)
{
	comp_t *c = cookie;
	int r = c->failed ? -1 : push(c, NULL, 0, true);
	int e = errno;
	if (fclose(c->raw) && !r) {
		r = -1;
		e = errno;
	}
	comp_free(c);
	errno = e;
	return r;
}

FILE *ht_comp_open(FILE *raw, ht_comp_t kind, int *err)
{
	comp_t *c = calloc(1, sizeof(*c));
	if (!c) {
		*err = -ENOMEM;
		fclose(raw);
		return NULL;
	}
	c->raw = raw;
	c->kind = kind;
	bool ok;
	if (kind == HT_COMP_ZSTD) {
		ok = (c->zc = ZSTD_createCCtx()) != NULL &&
		     !ZSTD_isError(ZSTD_CCtx_setParameter(c->zc, ZSTD_c_compressionLevel, 3)) &&
		     !ZSTD_isError(ZSTD_CCtx_setParameter(c->zc, ZSTD_c_checksumFlag, 1));
	} else {
		/* windowBits 15 + 16: the gzip wrapper, as gzip -d reads */
		ok = deflateInit2(&c->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
				  Z_DEFAULT_STRATEGY) == Z_OK;
		if (!ok)
			c->kind = HT_COMP_ZSTD; /* nothing to end: comp_free frees the context (NULL) */
	}
	cookie_io_functions_t io = { NULL, comp_write, NULL, comp_close };
	FILE *f = ok ? fopencookie(c, "w", io) : NULL;
	if (!f) {
		*err = ok ? -errno : -ENOMEM;
		fclose(raw);
		comp_free(c);
		return NULL;
	}
	return f;
}
