/*
 * Network ranges (see netrange.h). Addresses go through inet_pton and
 * inet_ntop on bounded copies; a prefix is at most three digits.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "netrange.h"
#include "text.h"

static const char netrange_separators[] = " \t,";

static bool bits_past_prefix(const uint8_t *addr, unsigned nbytes, unsigned prefix)
{
	for (unsigned i = 0; i < nbytes; i++) {
		unsigned keep = prefix >= (i + 1) * 8 ? 8 : prefix > i * 8 ? prefix - i * 8 : 0;
		uint8_t mask = keep ? (uint8_t)(0xffu << (8 - keep)) : 0;

		if (addr[i] & (uint8_t)~mask)
			return true;
	}
	return false;
}

int fatelf_netrange_parse(const char *s, size_t len, fatelf_netrange *ret, fatelf_diag *d)
{
	char text[FATELF_NETRANGE_TEXT_MAX], quoted[FATELF_TEXT_QUOTE_BUF];
	const char *slash = memchr(s, '/', len);
	size_t alen = slash ? (size_t)(slash - s) : len;
	fatelf_netrange r = { 0 };
	unsigned max;

	fatelf_text_quote_n(s, len, quoted);
	if (alen == 0 || alen >= sizeof(text))
		return fatelf_diag_set(d, -EINVAL, -1, "'%s' is not an IPv4 or IPv6 network", quoted);
	memcpy(text, s, alen);
	text[alen] = '\0';
	if (inet_pton(AF_INET, text, r.addr) == 1)
		r.family = AF_INET;
	else if (inet_pton(AF_INET6, text, r.addr) == 1)
		r.family = AF_INET6;
	else
		return fatelf_diag_set(d, -EINVAL, -1, "'%s' is not an IPv4 or IPv6 network", quoted);
	max = r.family == AF_INET ? 32 : 128;
	r.prefix = max;
	if (slash) {
		size_t plen = len - alen - 1;

		if (plen == 0 || plen > 3 || strspn(slash + 1, "0123456789") < plen)
			return fatelf_diag_set(d, -EINVAL, -1, "'%s': the prefix length is not a number",
					       quoted);
		r.prefix = 0;
		for (size_t i = 0; i < plen; i++)
			r.prefix = r.prefix * 10 + (unsigned)(slash[1 + i] - '0');
		if (r.prefix > max)
			return fatelf_diag_set(d, -EINVAL, -1, "'%s': the prefix length is more than %u",
					       quoted, max);
	}
	/* An IPv4-mapped network is an IPv4 one: connections to such
	 * addresses are matched as IPv4 (see fatelf_netranges_match). */
	if (r.family == AF_INET6 && r.prefix >= 96 && memcmp(r.addr, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0) {
		memmove(r.addr, r.addr + 12, 4);
		memset(r.addr + 4, 0, 12);
		r.family = AF_INET;
		r.prefix -= 96;
		max = 32;
	}
	if (bits_past_prefix(r.addr, max / 8, r.prefix)) {
		char net[FATELF_NETRANGE_TEXT_MAX];
		fatelf_netrange n = r;

		for (unsigned i = 0; i < max / 8; i++) {
			unsigned keep = r.prefix >= (i + 1) * 8 ? 8 : r.prefix > i * 8 ? r.prefix - i * 8 : 0;

			n.addr[i] &= keep ? (uint8_t)(0xffu << (8 - keep)) : 0;
		}
		return fatelf_diag_set(d, -EINVAL, -1,
				       "'%s': bits are set past the prefix length (the network is %s)",
				       quoted, fatelf_netrange_format(&n, net));
	}
	*ret = r;
	return 0;
}

int fatelf_netranges_add(fatelf_netranges *l, const char *text, fatelf_diag *d)
{
	fatelf_netranges next = *l;
	const char *p = text;

	for (p += strspn(p, netrange_separators); *p; p += strspn(p, netrange_separators)) {
		size_t len = strcspn(p, netrange_separators);

		if (next.n >= FATELF_NETRANGES_MAX)
			return fatelf_diag_set(d, -E2BIG, -1, "more than %u networks",
					       FATELF_NETRANGES_MAX);
		int r = fatelf_netrange_parse(p, len, &next.v[next.n], d);

		if (r < 0)
			return r;
		next.n++;
		p += len;
	}
	*l = next;
	return 0;
}

void fatelf_netranges_default(fatelf_netranges *l)
{
	l->n = 0;
	/* The default list is ours and parses. */
	(void)fatelf_netranges_add(l, FATELF_NETRANGES_DEFAULT, NULL);
}

const char *fatelf_netrange_format(const fatelf_netrange *r, char buf[FATELF_NETRANGE_TEXT_MAX])
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(r->family, r->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, FATELF_NETRANGE_TEXT_MAX, "%s/%u", a, r->prefix);
	return buf;
}

int fatelf_netranges_format(const fatelf_netranges *l, char *buf, size_t size)
{
	size_t o = 0;

	if (size == 0)
		return -ENOBUFS;
	buf[0] = '\0';
	for (size_t i = 0; i < l->n; i++) {
		char one[FATELF_NETRANGE_TEXT_MAX];
		int n = snprintf(buf + o, size - o, "%s%s", i ? "," : "",
				 fatelf_netrange_format(&l->v[i], one));

		if (n < 0 || (size_t)n >= size - o) {
			buf[o] = '\0';
			return -ENOBUFS;
		}
		o += (size_t)n;
	}
	return 0;
}

static bool netrange_holds(const fatelf_netrange *r, int family, const uint8_t *addr)
{
	unsigned full = r->prefix / 8, rest = r->prefix % 8;

	if (r->family != family)
		return false;
	if (memcmp(r->addr, addr, full) != 0)
		return false;
	return rest == 0 || ((r->addr[full] ^ addr[full]) & (uint8_t)(0xffu << (8 - rest))) == 0;
}

bool fatelf_netrange_is_unspecified(const struct sockaddr *sa, size_t salen)
{
	static const uint8_t zero[16], v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (sa && sa->sa_family == AF_INET && salen >= sizeof(struct sockaddr_in))
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == 0;
	if (sa && sa->sa_family == AF_INET6 && salen >= sizeof(struct sockaddr_in6)) {
		const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;

		return memcmp(a, zero, 16) == 0 ||
		       (memcmp(a, v4mapped, 12) == 0 && memcmp(a + 12, zero, 4) == 0);
	}
	return false;
}

uint64_t fatelf_netranges_match(const fatelf_netranges *l, const struct sockaddr *sa, size_t salen)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	uint8_t addr[16] = { 0 };
	int family;
	uint64_t hits = 0;

	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET && salen >= sizeof(struct sockaddr_in)) {
		memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		family = AF_INET;
	} else if (sa->sa_family == AF_INET6 && salen >= sizeof(struct sockaddr_in6)) {
		memcpy(addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		family = AF_INET6;
		if (memcmp(addr, v4mapped, sizeof(v4mapped)) == 0) {
			memmove(addr, addr + 12, 4);
			memset(addr + 4, 0, 12);
			family = AF_INET;
		}
	} else {
		return 0;
	}
	for (size_t i = 0; i < l->n && i < FATELF_NETRANGES_MAX; i++)
		if (netrange_holds(&l->v[i], family, addr))
			hits |= (uint64_t)1 << i;
	/* A connection to the unspecified address (0.0.0.0, ::) reaches this
	 * host's loopback: it is in every range that holds the loopback. */
	if (fatelf_netrange_is_unspecified(sa, salen)) {
		static const uint8_t lo4[4] = { 127, 0, 0, 1 }, lo6[16] = { [15] = 1 };

		for (size_t i = 0; i < l->n && i < FATELF_NETRANGES_MAX; i++)
			if (netrange_holds(&l->v[i], family, family == AF_INET ? lo4 : lo6))
				hits |= (uint64_t)1 << i;
	}
	return hits;
}
