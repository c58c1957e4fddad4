/*
 * /init for the initramfs that scripts/check/kernel-build.sh boots under qemu: checks that the
 * booted kernel accepts the BTF it was built with, prints one "PASS: ..." / "FAIL: ..." line
 * per check and a final "RESULT: PASS" or "RESULT: FAIL" on the console, then reboots (the
 * script runs qemu with -no-reboot, so that ends qemu; a tinyconfig kernel has no ACPI, so
 * RB_POWER_OFF would only halt).
 *
 * Checks:
 *   - proc, sysfs and devtmpfs mount;
 *   - /sys/kernel/btf/vmlinux is a BTF blob, and loading it back through bpf(BPF_BTF_LOAD)
 *     succeeds (the verifier log is printed on failure);
 *   - the kernel's BTF registry (BPF_BTF_GET_NEXT_ID) has a kernel BTF named "vmlinux";
 *   - every module in /etc/modules.list loads with finit_module (the script lists them in
 *     dependency order; a module that fails with ENOENT, an unknown symbol, is retried until
 *     no progress all the same); the kernel refuses a module whose BTF it cannot parse;
 *   - for each module: /sys/kernel/btf/<module> exists and is a non-empty BTF blob, the
 *     registry has a kernel BTF of that name, and the module's split BTF appended to the
 *     vmlinux BTF (types after types, strings after strings, which keeps every type id and
 *     string offset) loads through BPF_BTF_LOAD, since BPF_BTF_LOAD takes no base BTF;
 *   - no kernel log line mentioning BTF looks like an error, and there is no "BPF:" line
 *     (the prefix of the kernel's own BTF verifier messages).
 *
 * Then, not a check of its own (the script compares each line with `dwarf2btf verify
 * --kernel-version`): every probe file in /probes/list ("NAME PATH" per line, the small BTF
 * files of tests/data/probes) is loaded with BPF_BTF_LOAD, and its verdict printed as
 * "PROBE <name> accepted" or "PROBE <name> rejected <errno> <strerror>".
 *
 * Built by the script with `gcc -static -O2`; no headers beyond libc's and btf-load.h (shared
 * with scripts/check/kernel-check/init.c) are needed.
 */
#include "btf-load.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#define NR_FINIT_MODULE 313 /* x86_64 */

struct btf_info {
	uint64_t btf;
	uint32_t btf_size, id;
	uint64_t name;
	uint32_t name_len, kernel_btf;
} __attribute__((aligned(8)));

static int failures;

static void result(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void result(int ok, const char *fmt, ...)
{
	va_list ap;
	printf("%s: ", ok ? "PASS" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
}

/* BPF_BTF_LOAD; returns the fd or -1, printing the tail of the verifier log on failure. */
static int btf_load(const void *data, size_t len, const char *what)
{
	int retried;
	int fd = btf_load_logged(data, len, &retried);
	if (retried) /* should not happen; keep the fd and say so */
		printf("note: %s loaded on the retry with a log\n", what);
	if (fd >= 0)
		return fd;
	int err = errno;
	size_t l = strlen(btf_log);
	const char *tail = l > 4000 ? btf_log + l - 4000 : btf_log;
	printf("BPF_BTF_LOAD of %s: %s; verifier log%s:\n%s\n", what, strerror(err),
	       l > 4000 ? " (last 4000 bytes)" : "", tail);
	errno = err;
	return -1;
}

struct kbtf {
	uint32_t id, kernel_btf, size;
	char name[64];
};
static struct kbtf registry[512];
static int nregistry;

static void read_registry(void)
{
	nregistry = 0;
	uint32_t id = 0;
	while (nregistry < (int)(sizeof(registry) / sizeof(registry[0]))) {
		union attr a;
		memset(&a, 0, sizeof(a));
		a.id.id = id;
		if (bpf(CMD_BTF_GET_NEXT_ID, &a) < 0)
			break; /* ENOENT: end of list */
		id = a.id.next_id;
		memset(&a, 0, sizeof(a));
		a.id.id = id;
		int fd = bpf(CMD_BTF_GET_FD_BY_ID, &a);
		if (fd < 0)
			continue;
		struct kbtf *k = &registry[nregistry];
		struct btf_info info;
		memset(&info, 0, sizeof(info));
		memset(k, 0, sizeof(*k));
		info.name = (uintptr_t)k->name;
		info.name_len = sizeof(k->name);
		memset(&a, 0, sizeof(a));
		a.info.bpf_fd = fd;
		a.info.info_len = sizeof(info);
		a.info.info = (uintptr_t)&info;
		if (bpf(CMD_OBJ_GET_INFO_BY_FD, &a) == 0) {
			k->id = info.id;
			k->kernel_btf = info.kernel_btf;
			k->size = info.btf_size;
			nregistry++;
		}
		close(fd);
	}
}

static struct kbtf *registry_find(const char *name)
{
	for (int i = 0; i < nregistry; i++)
		if (registry[i].kernel_btf && strcmp(registry[i].name, name) == 0)
			return &registry[i];
	return NULL;
}

static void do_mount(const char *src, const char *dir, const char *type)
{
	mkdir(dir, 0755);
	if (mount(src, dir, type, 0, NULL) == 0 || errno == EBUSY)
		result(1, "mount %s on %s", type, dir);
	else
		result(0, "mount %s on %s: %s", type, dir, strerror(errno));
}

#define MAXMOD 256
static char *mod_path[MAXMOD], *mod_name[MAXMOD];
static int mod_loaded[MAXMOD], nmod;

static void read_module_list(void)
{
	FILE *f = fopen("/etc/modules.list", "r");
	if (!f) {
		printf("no /etc/modules.list: no modules to check\n");
		return;
	}
	char line[512];
	while (nmod < MAXMOD && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = 0;
		if (!line[0])
			continue;
		mod_path[nmod] = strdup(line);
		const char *b = strrchr(line, '/');
		char *n = strdup(b ? b + 1 : line);
		char *dot = strstr(n, ".ko");
		if (dot)
			*dot = 0;
		for (char *p = n; *p; p++)
			if (*p == '-')
				*p = '_';
		mod_name[nmod++] = n;
	}
	fclose(f);
}

static void load_modules(void)
{
	int last_err[MAXMOD] = {0};
	for (int progress = 1; progress;) {
		progress = 0;
		for (int i = 0; i < nmod; i++) {
			if (mod_loaded[i] || (last_err[i] && last_err[i] != ENOENT))
				continue; /* retry only an unknown symbol (ENOENT) */
			int fd = open(mod_path[i], O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				last_err[i] = errno;
				continue;
			}
			long r = syscall(NR_FINIT_MODULE, fd, "", 0);
			last_err[i] = r == 0 ? 0 : errno;
			close(fd);
			if (r == 0 || last_err[i] == EEXIST) {
				mod_loaded[i] = 1;
				progress = 1;
			}
		}
	}
	for (int i = 0; i < nmod; i++)
		result(mod_loaded[i], "finit_module %s%s%s", mod_path[i], mod_loaded[i] ? "" : ": ",
		       mod_loaded[i] ? "" : strerror(last_err[i]));
}

static void check_module_btf(int i, const unsigned char *base, size_t base_len, const struct btf_header *bh)
{
	char path[256];
	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", mod_name[i]);
	size_t len = 0;
	unsigned char *d = slurp(path, &len);
	struct btf_header h;
	if (!d || len == 0) {
		result(0, "%s: %s", path, d ? "empty" : strerror(errno));
		free(d);
		return;
	}
	if (!valid_btf(d, len, &h)) {
		result(0, "%s (%zu bytes) is not a BTF blob", path, len);
		free(d);
		return;
	}
	result(1, "%s: split BTF, %zu bytes (%u of types, %u of strings)", path, len, h.type_len, h.str_len);

	struct kbtf *k = registry_find(mod_name[i]);
	if (k)
		result(1, "kernel BTF registry has %s (id %u, %u bytes)", mod_name[i], k->id, k->size);
	else
		result(0, "kernel BTF registry has no BTF named %s", mod_name[i]);

	if (!base) {
		free(d);
		return;
	}
	size_t mlen;
	unsigned char *m = btf_join(base, bh, d, &h, &mlen);
	char what[128];
	snprintf(what, sizeof(what), "vmlinux+%s BTF", mod_name[i]);
	int fd = btf_load(m, mlen, what);
	result(fd >= 0, "BPF_BTF_LOAD of vmlinux BTF + %s split BTF (%zu bytes)%s%s", mod_name[i],
	       mlen, fd >= 0 ? "" : ": ", fd >= 0 ? "" : strerror(errno));
	if (fd >= 0)
		close(fd);
	free(m);
	free(d);
	(void)base_len;
}

static int looks_like_error(const char *line)
{
	static const char *words[] = {"fail", "Fail", "FAIL", "invalid", "Invalid", "error", "Error",
				      "mismatch", "refus", "unable", "Unable", "bad", "Bad", NULL};
	/* klogctl lines are "<level>[ seconds] text"; the timestamp is there with PRINTK_TIME */
	const char *text = line;
	if (*text == '<' && strchr(text, '>'))
		text = strchr(text, '>') + 1;
	if (*text == '[' && strchr(text, ']'))
		text = strchr(text, ']') + 1;
	while (*text == ' ')
		text++;
	if (strncmp(text, "BPF:", 4) == 0)
		return 1;
	if (!strstr(line, "BTF"))
		return 0;
	for (int i = 0; words[i]; i++)
		if (strstr(line, words[i]))
			return 1;
	return 0;
}

static void check_kernel_log(void)
{
	static char buf[1 << 20];
	int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof(buf) - 1);
	if (n < 0) {
		result(0, "read the kernel log: %s", strerror(errno));
		return;
	}
	buf[n] = 0;
	int bad = 0;
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (strstr(line, "BTF") || strstr(line, "BPF:") || strstr(line, "btf"))
			printf("klog: %s\n", line);
		if (looks_like_error(line)) {
			printf("FAIL: kernel log: %s\n", line);
			bad++;
		}
	}
	if (bad)
		failures += bad;
	else
		result(1, "kernel log (%d bytes) has no BTF error", n);
}

/* Loads each probe in /probes/list and prints its PROBE line; a rejection is the kernel's
 * answer, not a failure. */
static void load_probes(void)
{
	FILE *f = fopen("/probes/list", "r");
	if (!f) {
		printf("no /probes/list: no probes to load\n");
		return;
	}
	char name[128], path[384];
	while (fscanf(f, "%127s %383s", name, path) == 2) {
		size_t len = 0;
		unsigned char *d = slurp(path, &len);
		if (!d) {
			printf("PROBE %s unreadable %s\n", name, strerror(errno));
			continue;
		}
		int retried;
		int fd = btf_load_logged(d, len, &retried);
		if (fd >= 0) {
			printf("PROBE %s accepted\n", name);
			close(fd);
		} else {
			printf("PROBE %s rejected %d %s\n", name, errno, strerror(errno));
		}
		free(d);
	}
	fclose(f);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("dwarf2btf kernel-build init\n");
	do_mount("proc", "/proc", "proc");
	do_mount("sysfs", "/sys", "sysfs");
	do_mount("devtmpfs", "/dev", "devtmpfs");
	struct utsname u;
	if (uname(&u) == 0)
		printf("kernel: %s %s %s\n", u.release, u.version, u.machine);

	size_t vlen = 0;
	unsigned char *vmlinux = slurp("/sys/kernel/btf/vmlinux", &vlen);
	struct btf_header vh;
	if (!vmlinux) {
		result(0, "read /sys/kernel/btf/vmlinux: %s", strerror(errno));
	} else if (!valid_btf(vmlinux, vlen, &vh)) {
		result(0, "/sys/kernel/btf/vmlinux (%zu bytes) is not a BTF blob", vlen);
		free(vmlinux);
		vmlinux = NULL;
	} else {
		result(1, "/sys/kernel/btf/vmlinux: %zu bytes (%u of types, %u of strings)", vlen, vh.type_len,
		       vh.str_len);
		int fd = btf_load(vmlinux, vlen, "/sys/kernel/btf/vmlinux");
		result(fd >= 0, "BPF_BTF_LOAD of /sys/kernel/btf/vmlinux%s%s", fd >= 0 ? "" : ": ",
		       fd >= 0 ? "" : strerror(errno));
		if (fd >= 0)
			close(fd);
	}

	read_module_list();
	load_modules();
	read_registry();
	struct kbtf *k = registry_find("vmlinux");
	if (k)
		result(1, "kernel BTF registry has vmlinux (id %u, %u bytes)", k->id, k->size);
	else
		result(0, "kernel BTF registry has no vmlinux BTF (%d kernel BTF objects)", nregistry);
	for (int i = 0; i < nmod; i++)
		if (mod_loaded[i])
			check_module_btf(i, vmlinux, vlen, &vh);

	check_kernel_log();
	load_probes();
	printf("RESULT: %s (%d failed)\n", failures ? "FAIL" : "PASS", failures);
	fflush(stdout);
	sync();
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}
