/*
 * What the initramfs /init programs share (scripts/check/kernel-build/init.c, which checks a built
 * kernel's own BTF, and scripts/check/kernel-check/init.c, which checks given BTF files on Debian's
 * 6.1 kernel): the bpf() calls, reading whole files, BTF headers, loading BTF with
 * BPF_BTF_LOAD (without a log first; on failure again with a log, for the reason), and
 * joining split BTF to its base.
 *
 * Header-only, static functions: each /init is one translation unit built with
 * `gcc -static -O2`; no headers beyond libc's are needed.
 */
#ifndef DWARF2BTF_BTF_LOAD_H
#define DWARF2BTF_BTF_LOAD_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NR_BPF 321 /* x86_64 */

enum { CMD_OBJ_GET_INFO_BY_FD = 15, CMD_BTF_LOAD = 18, CMD_BTF_GET_FD_BY_ID = 19, CMD_BTF_GET_NEXT_ID = 23 };

union attr {
	struct { /* BPF_BTF_LOAD */
		uint64_t btf, btf_log_buf;
		uint32_t btf_size, btf_log_size, btf_log_level;
	} load;
	struct { /* BPF_BTF_GET_NEXT_ID, BPF_BTF_GET_FD_BY_ID */
		uint32_t id, next_id, open_flags;
	} id;
	struct { /* BPF_OBJ_GET_INFO_BY_FD */
		uint32_t bpf_fd, info_len;
		uint64_t info;
	} info;
	uint8_t pad[128];
};

struct btf_header {
	uint16_t magic;
	uint8_t version, flags;
	uint32_t hdr_len, type_off, type_len, str_off, str_len;
};

static long bpf(int cmd, union attr *a)
{
	return syscall(NR_BPF, cmd, a, sizeof(*a));
}

/* Reads a whole file (sysfs bin files report their size, but read to EOF anyway). */
static unsigned char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 20, n = 0;
	unsigned char *buf = malloc(cap);
	for (;;) {
		if (n == cap)
			buf = realloc(buf, cap *= 2);
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			int err = errno;
			free(buf);
			close(fd);
			errno = err;
			return NULL;
		}
		if (r == 0)
			break;
		n += r;
	}
	close(fd);
	*len = n;
	return buf;
}

/* Whether `d` holds a BTF header (host byte order) whose sections lie within `len` bytes. */
static int valid_btf(const unsigned char *d, size_t len, struct btf_header *h)
{
	if (len < sizeof(*h))
		return 0;
	memcpy(h, d, sizeof(*h));
	return h->magic == 0xeB9F && h->hdr_len >= sizeof(*h) && h->hdr_len <= len &&
	       (uint64_t)h->hdr_len + h->type_off + h->type_len <= len &&
	       (uint64_t)h->hdr_len + h->str_off + h->str_len <= len;
}

/* The verifier log of the last failed btf_load_logged (NUL-terminated). */
static char btf_log[16 << 20];

/*
 * BPF_BTF_LOAD; returns the fd, or -1 with errno set by the first call (the kernel's
 * verdict) and the verifier log of a second call with a level-1 log in btf_log. *retried is
 * set when only that second call succeeded (it should not).
 */
static int btf_load_logged(const void *data, size_t len, int *retried)
{
	union attr a;
	memset(&a, 0, sizeof(a));
	a.load.btf = (uintptr_t)data;
	a.load.btf_size = len;
	*retried = 0;
	int fd = bpf(CMD_BTF_LOAD, &a);
	if (fd >= 0)
		return fd;
	int err = errno;
	memset(&a, 0, sizeof(a));
	btf_log[0] = 0;
	a.load.btf = (uintptr_t)data;
	a.load.btf_size = len;
	a.load.btf_log_buf = (uintptr_t)btf_log;
	a.load.btf_log_size = sizeof(btf_log);
	a.load.btf_log_level = 1;
	fd = bpf(CMD_BTF_LOAD, &a);
	btf_log[sizeof(btf_log) - 1] = 0;
	if (fd >= 0) {
		*retried = 1;
		return fd;
	}
	errno = err;
	return -1;
}

/*
 * Split BTF appended to its base: one standalone BTF (types after types, strings after
 * strings, which keeps every type id and string offset), since BPF_BTF_LOAD takes no base
 * BTF. Returns a malloc'ed blob of *len bytes.
 */
static unsigned char *btf_join(const unsigned char *base, const struct btf_header *bh,
			       const unsigned char *split, const struct btf_header *sh, size_t *len)
{
	size_t tl = (size_t)bh->type_len + sh->type_len, sl = (size_t)bh->str_len + sh->str_len;
	unsigned char *m = malloc(sizeof(struct btf_header) + tl + sl);
	struct btf_header mh = *bh;
	mh.hdr_len = sizeof(mh);
	mh.type_off = 0;
	mh.type_len = tl;
	mh.str_off = tl;
	mh.str_len = sl;
	unsigned char *p = m;
	memcpy(p, &mh, sizeof(mh)), p += sizeof(mh);
	memcpy(p, base + bh->hdr_len + bh->type_off, bh->type_len), p += bh->type_len;
	memcpy(p, split + sh->hdr_len + sh->type_off, sh->type_len), p += sh->type_len;
	memcpy(p, base + bh->hdr_len + bh->str_off, bh->str_len), p += bh->str_len;
	memcpy(p, split + sh->hdr_len + sh->str_off, sh->str_len), p += sh->str_len;
	*len = p - m;
	return m;
}

#endif
