/*
 * /init for the initramfs that scripts/check/kernel-check-6.1.sh boots under qemu: loads each BTF
 * file listed in /check/list with bpf(BPF_BTF_LOAD) and prints its verdict on the console,
 * then reboots (the script runs qemu with -no-reboot, so that ends qemu).
 *
 * /check/list has one line per file, "INDEX FILE BASE" (BASE is "-" for standalone BTF; split
 * BTF is loaded appended to its base, as BPF_BTF_LOAD takes no base). Output, one block per
 * file, for the script to read:
 *
 *   KERNEL <release>
 *   VERDICT <index> accepted
 *   VERDICT <index> rejected <errno> <strerror>
 *   LOG <index> <line>            (the verifier log's last lines, after a rejection)
 *   VERDICT <index> unreadable <reason>
 *   DONE <n>
 *
 * Built by the script with `gcc -static -O2`; shares btf-load.h with scripts/check/kernel-build.
 */
#include "../kernel-build/btf-load.h"

#include <stdio.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/utsname.h>

/* How many of the verifier log's last non-empty lines a rejection prints. */
#define LOG_LINES 8

/* Prints the verifier log's relevant end: from the last line naming a type ("[id] KIND ...")
 * when it is among the last LOG_LINES non-empty lines, else those lines. */
static void print_log_tail(int index)
{
	const char *starts[LOG_LINES];
	int n = 0;
	size_t len = strlen(btf_log);
	const char *end = btf_log + len;
	while (end > btf_log && n < LOG_LINES) {
		const char *e = end;
		while (e > btf_log && e[-1] == '\n')
			e--;
		if (e == btf_log)
			break;
		const char *s = e;
		while (s > btf_log && s[-1] != '\n')
			s--;
		starts[n++] = s;
		end = s;
	}
	int first = n - 1;
	for (int i = 0; i < n; i++)
		if (starts[i][0] == '[') {
			first = i;
			break;
		}
	for (int i = first; i >= 0; i--) {
		const char *e = strchr(starts[i], '\n');
		int l = e ? (int)(e - starts[i]) : (int)strlen(starts[i]);
		printf("LOG %d %.*s\n", index, l, starts[i]);
	}
}

/* Reads a BTF file; NULL (with a VERDICT line said) when it cannot. */
static unsigned char *read_btf(int index, const char *path, size_t *len, struct btf_header *h)
{
	unsigned char *d = slurp(path, len);
	if (!d) {
		printf("VERDICT %d unreadable %s: %s\n", index, path, strerror(errno));
		return NULL;
	}
	if (!valid_btf(d, *len, h)) {
		/* Not for us to judge: the kernel checks the header too. */
		memset(h, 0, sizeof(*h));
	}
	return d;
}

static void check(int index, const char *path, const char *base_path)
{
	size_t len, blen;
	struct btf_header h, bh;
	unsigned char *d = read_btf(index, path, &len, &h), *base = NULL, *joined = NULL;
	if (!d)
		return;
	const unsigned char *data = d;
	if (strcmp(base_path, "-") != 0) {
		base = read_btf(index, base_path, &blen, &bh);
		if (!base)
			goto out;
		if (!h.magic || !bh.magic) {
			printf("VERDICT %d unreadable %s is not BTF with in-bounds sections\n", index,
			       h.magic ? base_path : path);
			goto out;
		}
		joined = btf_join(base, &bh, d, &h, &len);
		data = joined;
	}
	int retried;
	int fd = btf_load_logged(data, len, &retried);
	if (fd >= 0) {
		printf("VERDICT %d accepted%s\n", index, retried ? " (on the retry with a log)" : "");
		close(fd);
	} else {
		int err = errno;
		printf("VERDICT %d rejected %d %s\n", index, err, strerror(err));
		print_log_tail(index);
	}
out:
	free(joined);
	free(base);
	free(d);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	mkdir("/proc", 0755);
	mount("proc", "/proc", "proc", 0, NULL);
	struct utsname u;
	/* a new line first: the firmware's escape sequences end without one */
	if (uname(&u) == 0)
		printf("\nKERNEL %s\n", u.release);
	FILE *f = fopen("/check/list", "r");
	int n = 0;
	char line[4096], path[2048], base[2048];
	int index;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%d %2047s %2047s", &index, path, base) != 3)
			continue;
		check(index, path, base);
		n++;
	}
	if (!f)
		printf("no /check/list: %s\n", strerror(errno));
	printf("DONE %d\n", n);
	fflush(stdout);
	sync();
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}
