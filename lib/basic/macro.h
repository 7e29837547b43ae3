/*
 * Private helpers of libfatelf: cleanup attributes, byte-order loads and
 * stores, small arithmetic. Nothing here is part of the public API.
 */
#ifndef FATELF_MACRO_H
#define FATELF_MACRO_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define _cleanup_close_ _cleanup_(closep)

/* Hand ownership off: returns the value and leaves the variable empty. */
#define TAKE_PTR(p) ({ __typeof__(p) _tp = (p); (p) = NULL; _tp; })
#define TAKE_FD(fd) ({ int _tf = (fd); (fd) = -1; _tf; })

static inline uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | ((uint64_t)get_le32(p + 4) << 32);
}
static inline uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static inline uint64_t get_be64(const uint8_t *p)
{
	return ((uint64_t)get_be32(p) << 32) | (uint64_t)get_be32(p + 4);
}
static inline void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static inline void put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}
static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

/* Loads in an ELF image's own byte order (big when msb). */
static inline uint16_t get_e16(const uint8_t *p, int msb)
{
	return msb ? get_be16(p) : get_le16(p);
}
static inline uint32_t get_e32(const uint8_t *p, int msb)
{
	return msb ? get_be32(p) : get_le32(p);
}
static inline uint64_t get_e64(const uint8_t *p, int msb)
{
	return msb ? get_be64(p) : get_le64(p);
}

#endif
