#!/usr/bin/python3
# What one store transaction wrote, from fatelfd's SQLite log (WAL):
#   bench/store-census.py BEFORE.wal AFTER.wal DATABASE
# BEFORE.wal and AFTER.wal: copies of the log taken just before and just
# after the transaction (before the daemon's idle-time checkpoint);
# DATABASE: a copy of the database once that checkpoint is done. Prints
# one line: the log frames the transaction appended, the distinct pages
# they hold and the b-tree (table or index) of each, and the distinct
# 4 KiB blocks of the database file those pages fall in, which is what
# the checkpoint makes the page cache write (a 4 KiB page per block).
import collections
import sqlite3
import struct
import sys


def frames(path):
    """(salts, page size, [page number of each valid frame])"""
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 32:
        return None, 0, []
    magic, _ver, psize, _ckseq, s1, s2, _c1, _c2 = struct.unpack('>8I', data[:32])
    if magic not in (0x377f0682, 0x377f0683) or psize < 512 or psize & (psize - 1):
        return None, 0, []
    pages, off = [], 32
    while off + 24 + psize <= len(data):
        pg, _dbsize, f1, f2 = struct.unpack('>4I', data[off:off + 16])
        if (f1, f2) != (s1, s2):
            break
        pages.append(pg)
        off += 24 + psize
    return (s1, s2), psize, pages


def main():
    before, after, db = sys.argv[1:4]
    salts0, _, pages0 = frames(before)
    salts, psize, pages = frames(after)
    if not pages:
        print('the log after the transaction holds no frame')
        return 1
    # The same salts: the log grew; new ones: it started over.
    new = pages[len(pages0):] if salts == salts0 else pages
    distinct = sorted(set(new))
    con = sqlite3.connect('file:%s?mode=ro' % db, uri=True)
    try:
        owner = dict(con.execute('SELECT pageno, name FROM dbstat'))
    except sqlite3.Error:
        owner = {}
    by = collections.Counter(owner.get(p, 'free or new') for p in distinct)
    blocks = len(set((p - 1) * psize // 4096 for p in distinct))
    parts = ', '.join('%d %s' % (n, name) for name, n in by.most_common())
    print('the log took %d frames of %d-byte pages (%d bytes), %d distinct pages (%s); '
          'they lie in %d distinct 4 KiB blocks of the database (%d bytes at the checkpoint)'
          % (len(new), psize, len(new) * (psize + 24), len(distinct), parts, blocks, blocks * 4096))
    return 0


if __name__ == '__main__':
    sys.exit(main())
