/* compress.h - an output stream compressed as its file's name says
 * (`heaptrail convert -o x.zst`, `-o x.gz`). */
#ifndef HEAPTRAIL_COMPRESS_H
#define HEAPTRAIL_COMPRESS_H

#include <stdio.h>

typedef enum { HT_COMP_NONE, HT_COMP_ZSTD, HT_COMP_GZIP } ht_comp_t;

/* By the name's ending: .zst or .zstd: zstd; .gz: gzip; else none. */
ht_comp_t ht_comp_for_path(const char *path);

/* A stream that compresses what is written to it into raw, which it then
 * owns: fclose of the result ends the compressed stream and closes raw,
 * returning EOF (errno set) when any of it failed. NULL with *err
 * (-errno) set when it cannot be made; raw is closed then too. */
FILE *ht_comp_open(FILE *raw, ht_comp_t kind, int *err);

#endif /* HEAPTRAIL_COMPRESS_H */
