/*
 * Network ranges (CIDR blocks, "10.0.0.0/8", "fe80::/10"): parsing a
 * list as a config file or a command line gives it, formatting it back,
 * and matching a socket address against it. The download helper uses a
 * list to refuse connections into networks an admin denied (loopback,
 * link-local, private ranges by default). No allocation: a list is a
 * fixed array, so a config that holds one copies by assignment.
 */
#ifndef FATELF_NETRANGE_H
#define FATELF_NETRANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "diag.h"

/* Ranges in one list; a match is reported as a bitmask over them. */
#define FATELF_NETRANGES_MAX 64
/* "ffff:...:ffff/128" and its NUL. */
#define FATELF_NETRANGE_TEXT_MAX 48

typedef struct fatelf_netrange {
	int family;                 /* AF_INET or AF_INET6 */
	unsigned prefix;            /* 0..32 or 0..128 */
	uint8_t addr[16];           /* the network: bits past the prefix are 0; IPv4 in addr[0..3] */
} fatelf_netrange;

typedef struct fatelf_netranges {
	size_t n;
	fatelf_netrange v[FATELF_NETRANGES_MAX];
} fatelf_netranges;

/* The default deny list: loopback, "this network", link-local, private
 * and shared (carrier-grade NAT) IPv4 ranges; IPv6 loopback, unspecified,
 * link-local and unique local addresses. */
#define FATELF_NETRANGES_DEFAULT \
	"127.0.0.0/8 0.0.0.0/8 169.254.0.0/16 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 " \
	"100.64.0.0/10 ::1/128 ::/128 fe80::/10 fc00::/7"

/* Parsing: "ADDR/PREFIX", or "ADDR" alone for one host. -EINVAL, with d
 * saying why, for anything else, for a prefix longer than the address and
 * for bits set past the prefix ("10.0.0.1/8"). */
int fatelf_netrange_parse(const char *s, size_t len, fatelf_netrange *ret, fatelf_diag *d);
/* Appends every range of text (separated by spaces, tabs or commas) to l:
 * all or none. -E2BIG past FATELF_NETRANGES_MAX. */
int fatelf_netranges_add(fatelf_netranges *l, const char *text, fatelf_diag *d);
void fatelf_netranges_default(fatelf_netranges *l);

/* Formatting: "10.0.0.0/8", and a list as comma-separated ranges ("" for
 * none), which fatelf_netranges_add reads back. -ENOBUFS when size is too
 * small. */
const char *fatelf_netrange_format(const fatelf_netrange *r, char buf[FATELF_NETRANGE_TEXT_MAX]);
int fatelf_netranges_format(const fatelf_netranges *l, char *buf, size_t size);

/* The ranges of l that hold the address, as a bitmask (bit i: l->v[i]);
 * 0 for none or for an address that is neither IPv4 nor IPv6. An
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d) is matched as IPv4. The
 * unspecified address is also in each range that holds 127.0.0.1 or ::1,
 * since a connection to it reaches this host's loopback. */
bool fatelf_netrange_is_unspecified(const struct sockaddr *sa, size_t salen);
uint64_t fatelf_netranges_match(const fatelf_netranges *l, const struct sockaddr *sa, size_t salen);

#endif
