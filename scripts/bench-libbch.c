/*
 * Linux lib/bch.c throughput on the cases of nandlab's ecc benchmark
 * (crates/ecc/benches/bch.rs): 4 KiB data, m = 16 (0x1002d), t = 8, 40 and 60 with t/2 and
 * t errors, error-free decode and encode. Same data, same error patterns (the same
 * xorshift generators), and the same work per decode: copy the received word, flip the
 * pattern's bits, decode, apply the corrections.
 *
 * lib/bch.c itself is not in this repository (GPL-2.0): scripts/bench-ecc.sh fetches the
 * copy inside the bchlib source package from PyPI and compiles this file against it with
 * -O3 -march=native in the same run. Timing: best of 9 rounds of at least 0.1 s each
 * (BENCH_QUICK=1 in the environment: one short round, a smoke test of the harness).
 * Prints "libbch CASE MiB/s" lines, CASE named as in criterion's output.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bch.h"

#define SIZE 4096
#define PATTERNS 64

static uint64_t xs(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct ctx {
	struct bch_control *bch;
	uint8_t data[SIZE], buf[SIZE], ecc[256], e[256];
	unsigned int errloc[128];
	int errors;
	unsigned pos[PATTERNS][128];
	unsigned k;
};

static volatile unsigned sink;

static void op_encode(struct ctx *c)
{
	memset(c->e, 0, c->bch->ecc_bytes);
	bch_encode(c->bch, c->data, SIZE, c->e);
	sink += c->e[0];
}

static void decode_word(struct ctx *c, int expect)
{
	int n = bch_decode(c->bch, c->buf, SIZE, c->e, NULL, NULL, c->errloc);
	if (n != expect) {
		fprintf(stderr, "decode returned %d, expected %d\n", n, expect);
		exit(1);
	}
	for (int i = 0; i < n; i++)
		if (c->errloc[i] < 8 * SIZE)
			c->buf[c->errloc[i] / 8] ^= 1 << (c->errloc[i] % 8);
}

static void op_decode(struct ctx *c)
{
	memcpy(c->buf, c->data, SIZE);
	memcpy(c->e, c->ecc, c->bch->ecc_bytes);
	unsigned *p = c->pos[c->k++ % PATTERNS];
	for (int i = 0; i < c->errors; i++)
		c->buf[p[i] / 8] ^= 0x80 >> (p[i] % 8);
	decode_word(c, c->errors);
}

static void op_clean(struct ctx *c)
{
	memcpy(c->buf, c->data, SIZE);
	memcpy(c->e, c->ecc, c->bch->ecc_bytes);
	decode_word(c, 0);
}

static int quick;

static double rate(struct ctx *c, void (*op)(struct ctx *))
{
	long calls = 16;
	for (;;) {
		double s = now();
		for (long i = 0; i < calls; i++)
			op(c);
		if (quick || now() - s >= 0.1)
			break;
		calls *= 2;
	}
	double best = 1e30;
	for (int r = 0; r < (quick ? 1 : 9); r++) {
		double s = now();
		for (long i = 0; i < calls; i++)
			op(c);
		double per = (now() - s) / calls;
		if (per < best)
			best = per;
	}
	return SIZE / best / (1024.0 * 1024.0);
}

int main(void)
{
	static struct ctx c;
	const char *q = getenv("BENCH_QUICK");
	quick = q && *q && *q != '0';
	uint64_t x = 7;
	for (int i = 0; i < SIZE; i++)
		c.data[i] = (uint8_t)xs(&x);
	const int cases[][2] = { { 8, 4 }, { 8, 8 }, { 40, 20 }, { 40, 40 }, { 60, 30 }, { 60, 60 } };
	int last_t = 0;
	for (unsigned ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		int t = cases[ci][0];
		c.errors = cases[ci][1];
		if (t != last_t) {
			if (c.bch)
				bch_free(c.bch);
			c.bch = bch_init(16, t, 0x1002d, false);
			if (!c.bch) {
				fprintf(stderr, "bch_init(16, %d) failed\n", t);
				return 1;
			}
			memset(c.ecc, 0, sizeof c.ecc);
			bch_encode(c.bch, c.data, SIZE, c.ecc);
		}
		/* The patterns of the Rust benchmark: distinct data-bit positions. */
		for (unsigned k = 0; k < PATTERNS; k++) {
			uint64_t y = 0x9E3779B9ull + k;
			int n = 0;
			while (n < c.errors) {
				unsigned p = xs(&y) % (SIZE * 8);
				int dup = 0;
				for (int i = 0; i < n; i++)
					dup |= c.pos[k][i] == p;
				if (!dup)
					c.pos[k][n++] = p;
			}
		}
		c.k = 0;
		if (t != last_t) {
			printf("libbch bch-4KiB-t%d/encode %.1f\n", t, rate(&c, op_encode));
			printf("libbch bch-4KiB-t%d/decode-clean %.1f\n", t, rate(&c, op_clean));
		}
		printf("libbch bch-4KiB-t%d/decode-%derr %.1f\n", t, c.errors, rate(&c, op_decode));
		fflush(stdout);
		last_t = t;
	}
	bch_free(c.bch);
	return 0;
}
