#!/usr/bin/env python3
# A registry on 127.0.0.1 whose catalog and tag lists (the unsigned part
# of the distribution API) are hostile or merely large, for ocimem.sh.
#
# Usage: ociflood.py MODE LOG; it prints "ready PORT" once it listens on a
# free port and writes each request's path and query to LOG, a line each.
# MODE:
#   flood    a catalog of 12 packages under fatelf/ (all of it, whatever
#            n asks), each tag list ~16 MB of valid JSON (the old bound of
#            a reply was 16 MiB): "1.0", then many 120-byte tags;
#   pages    a registry that pages as the API says (?n=, &last=, sorted):
#            a catalog of 2500 names, 3 under fatelf/ (fatelf/many,
#            fatelf/one, fatelf/none), the rest under other/; fatelf/many
#            has 2345 version tags, fatelf/one "1.0" and "latest",
#            fatelf/none only "latest";
#   endless  a catalog that pages for ever: each page n new names under
#            fatelf/, past last.
import http.server
import json
import socketserver
import sys
import urllib.parse

MODE = sys.argv[1]
LOG = open(sys.argv[2], "a", buffering=1)

FLOOD_NAMES = ["fatelf/p%02d" % i for i in range(12)]
PAGES_NAMES = sorted(["other/x%04d" % i for i in range(2497)] + ["fatelf/many", "fatelf/one", "fatelf/none"])
PAGES_TAGS = {
    "fatelf/many": sorted("1.%d" % i for i in range(2345)),
    "fatelf/one": sorted(["1.0", "latest"]),
    "fatelf/none": ["latest"],
}
FLOOD_BODY = None


def flood_body():
    global FLOOD_BODY
    if FLOOD_BODY is None:
        parts = [b'{"name":"fatelf/p","tags":["1.0"']
        size = len(parts[0])
        i = 0
        while size < 16_000_000:
            t = b',"t%0119d"' % i
            parts.append(t)
            size += len(t)
            i += 1
        parts.append(b"]}")
        FLOOD_BODY = b"".join(parts)
    return FLOOD_BODY


def page(names, q):
    n = int(q.get("n", ["100000"])[0])
    last = q.get("last", [""])[0]
    return [x for x in names if x > last][:n]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, body, code=200):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        LOG.write("%s %s\n" % (u.path, u.query))
        if u.path == "/v2/_catalog":
            if MODE == "flood":
                names = FLOOD_NAMES
            elif MODE == "pages":
                names = page(PAGES_NAMES, q)
            else:
                n = int(q.get("n", ["100"])[0])
                last = q.get("last", ["fatelf/a"])[0]
                names = ["%s%06d" % (last, i) for i in range(n)]
            self.send(json.dumps({"repositories": names}).encode())
            return
        if u.path.startswith("/v2/") and u.path.endswith("/tags/list"):
            name = u.path[len("/v2/"):-len("/tags/list")]
            if MODE == "flood" and name in FLOOD_NAMES:
                self.send(flood_body())
                return
            if MODE == "pages" and name in PAGES_TAGS:
                self.send(json.dumps({"name": name, "tags": page(PAGES_TAGS[name], q)}).encode())
                return
        self.send(b'{"errors":[{"code":"NAME_UNKNOWN"}]}', 404)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if MODE == "flood":
    flood_body()
srv = Server(("127.0.0.1", 0), Handler)
print("ready %d" % srv.server_address[1], flush=True)
srv.serve_forever()
