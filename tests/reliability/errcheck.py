#!/usr/bin/env python3
# Checks Varlink error replies against their declarations in an interface
# file: each "error Name (p: type, ...)" line gives the parameters a reply
# of that error must carry, with their types (string, int, bool, ?T for
# optional or null, []T for an array). Unknown errors of the interface,
# missing or extra parameters and wrong types are refused.
#
# Usage: errcheck.py INTERFACE [REPLIES...]; each REPLIES file holds JSON
# lines (replies, or fatelfctl --json output); lines without "error" are
# skipped. Prints "ok NAME" or "bad NAME: why" per error reply, then
# "covered NAME..." (sorted, unique) and "declared NAME...". Exits 1 when a
# reply is bad, 0 otherwise.
import json
import re
import sys


def parse_interface(path):
    text = open(path).read()
    iface = re.search(r'^interface\s+(\S+)', text, re.M).group(1)
    errors = {}
    for m in re.finditer(r'^error\s+(\w+)\s*\(([^)]*)\)', text, re.M):
        params = {}
        for p in filter(None, (s.strip() for s in m.group(2).split(','))):
            name, typ = (s.strip() for s in p.split(':', 1))
            params[name] = typ
        errors[m.group(1)] = params
    return iface, errors


def type_ok(typ, v):
    if typ.startswith('?'):
        return v is None or type_ok(typ[1:], v)
    if typ.startswith('[]'):
        return isinstance(v, list) and all(type_ok(typ[2:], e) for e in v)
    if typ == 'string':
        return isinstance(v, str)
    if typ == 'int':
        return isinstance(v, int) and not isinstance(v, bool)
    if typ == 'bool':
        return isinstance(v, bool)
    if typ == 'float':
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, dict)      # a named type: an object


def check(errors, iface, reply):
    name = reply['error']
    if not name.startswith(iface + '.'):
        return None, name
    short = name[len(iface) + 1:]
    if short not in errors:
        return 'not declared in the interface', short
    params = reply.get('parameters') or {}
    decl = errors[short]
    extra = sorted(set(params) - set(decl))
    if extra:
        return 'undeclared parameters %s' % ', '.join(extra), short
    for p, typ in decl.items():
        if p not in params:
            if not typ.startswith('?'):
                return 'lacks %s (%s)' % (p, typ), short
            continue
        if not type_ok(typ, params[p]):
            return '%s is %s, declared %s' % (p, json.dumps(params[p]), typ), short
    return '', short


def main():
    iface, errors = parse_interface(sys.argv[1])
    bad = False
    covered = set()
    for path in sys.argv[2:]:
        for line in open(path):
            line = line.strip()
            if not line.startswith('{'):
                continue
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            if not isinstance(reply, dict) or not isinstance(reply.get('error'), str):
                continue
            why, short = check(errors, iface, reply)
            if why is None:
                continue
            covered.add(short)
            if why:
                bad = True
                print('bad %s: %s' % (short, why))
            else:
                print('ok %s' % short)
    print('covered ' + ' '.join(sorted(covered)))
    print('declared ' + ' '.join(sorted(errors)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
