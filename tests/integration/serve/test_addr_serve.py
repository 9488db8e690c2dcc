#!/usr/bin/python3
"""test_addr_serve.py — addresses are parsed, not guessed (kernels/fs_addr.h),
seen from outside: a real `featstore serve` on tests/data/cora.npz, and the
C client through the Python binding.

Server: every bad --listen, --metrics and --socket (and a bad "listen" in a
--config file) makes `featstore serve` exit on its own with the usage status
(2; 1 for the config file, like its other errors) and the named error on
stderr, before fs_serve starts: no "open files" line (fs_serve's first),
no dataset copied, no "serving" line, no READY line, no socket file, and,
for the ports that a 16-bit cast wraps (99999 -> 34463, 70000 -> 4464),
nothing listening on the wrapped port (/proc/net/tcp and tcp6). A server
that does start is killed and the case fails, naming what it listened on.

Client: against a live server started with `--socket unix:///ABS/PATH`, an
ephemeral gRPC port (and [::1] when this machine has IPv6 loopback), every
good URI connects and answers Info; every bad one is refused by
fs_connect with INVALID_ARGUMENT and the parser's message, surfaced by the
binding as featstore.Error: among them the ones the old prefix check let
through to the live server (a relative unix:// path from the socket's
directory, a port 65536 above the live one, a NUL byte cutting the URI
short in ctypes). `featstore stats` refuses bad URIs as usage errors.

    /usr/bin/python3 tests/integration/serve/test_addr_serve.py --featstore BUILD/cli/featstore --lib BUILD/client-lib/libfeatstore.so

Registered with ctest; exits 77 (skipped) without numpy. No timings are
asserted: a server gets 60 s to exit before it counts as serving.
"""
import os
import select
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))  # tests/lib: fs_serve
import fs_serve  # noqa: E402

ARGS = None
DATA = {}  # dir, dataset
featstore = None
USAGE = 2
LIVENESS_S = 60  # how long a refused server may take to exit before it counts as serving

# (option, value, the message fragment, the port a 16-bit cast would bind or None)
BAD_SERVE = [
    ("--listen", "127.0.0.1:99999", "--listen '127.0.0.1:99999': port 99999 is outside 1..65535", 99999 % 65536),
    ("--listen", "localhost:65536", "port 65536 is outside 1..65535", None),  # 0: would be any free port
    ("--listen", "unix:///tmp/featstore-addr-test.sock", "unix sockets are given with --socket PATH", None),
    ("--listen", "grpc://127.0.0.1:50051", "'grpc://' is a URI's scheme: give HOST:PORT alone", None),
    ("--listen", "::1:50051", "more than one ':' (an IPv6 address goes in brackets", None),
    ("--listen", "127.0.0.1", "no ':PORT'", None),
    ("--listen", ":50051", "the host is empty", None),
    ("--listen", "my host:50051", "host 'my host' has ' ' in it", None),
    ("--listen", "[::1]50051", "'50051' after ']' where ':PORT' belongs", None),
    ("--listen", "[::1:50051", "'[' without its ']'", None),
    ("--listen", "127.0.0.1:50051x", "port '50051x' is not a number", None),
    ("--listen", "256.0.0.1:50051", "host '256.0.0.1' is not an IPv4 address", None),
    ("--metrics", "127.0.0.1:70000", "--metrics '127.0.0.1:70000': port 70000 is outside 1..65535", 70000 % 65536),
    ("--metrics", "nonsense", "--metrics 'nonsense': no ':PORT'", None),
    ("--metrics", "[::1", "'[' without its ']'", None),
    ("--metrics", "unix:///tmp/featstore-addr-test.sock", "unix sockets are given with --socket PATH", None),
    ("--metrics", "127.0.0.1:-1", "port '-1' is not a number", None),
    ("--socket", "unix://relative.sock", "unix:// is followed by an absolute path", None),
    ("--socket", "unix:/tmp/featstore-addr-test.sock", "unix: is followed by // and an absolute path", None),
    ("--socket", "grpc://127.0.0.1:50051", "gRPC is given with --listen HOST:PORT", None),
    ("--socket", "/tmp/" + "a" * 120 + ".sock", "a unix socket's path has at most 107", None),
    ("--socket", "", "--socket '': the path is empty", None),
]


def listening_ports():
    """The TCP ports something listens on."""
    return {local for local, _ in fs_serve.tcp_sockets("0A")}


def has_ipv6_loopback():
    try:
        with open("/proc/net/if_inet6") as f:
            return any(line.split()[0] == "0" * 31 + "1" for line in f if line.strip())
    except FileNotFoundError:
        return False


def run_serve(args, wrapped=None):
    """Runs `featstore serve DATASET args` until it exits on its own:
    (status, stdout, stderr). One that prints READY, or is still running
    after LIVENESS_S, is serving: it is killed and the calling test fails,
    naming the wrapped port if it listens there."""
    proc = subprocess.Popen([ARGS.featstore, "serve", DATA["dataset"]] + args, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=fs_serve.die_with_parent)
    try:
        ready = fs_serve.read_ready(proc, LIVENESS_S)
    except RuntimeError:  # it exited first (or never said READY)
        ready = None
    if ready is not None or proc.poll() is None:
        bound = wrapped is not None and wrapped in listening_ports()
        proc.kill()
        proc.communicate()
        raise AssertionError(f"featstore serve {' '.join(args)} is serving: {ready}"
                             + (f"; it listens on port {wrapped}" if bound else ""))
    out, err = proc.communicate(timeout=LIVENESS_S)
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


class ServeRefusesBadAddresses(unittest.TestCase):

    def check_refused(self, args, want, status, wrapped=None, sock=None):
        before = listening_ports()
        rc, out, err = run_serve(args, wrapped)
        what = f"serve {' '.join(repr(a) for a in args)}"
        self.assertEqual(rc, status, f"{what}: exit {rc}, stderr: {err}")
        self.assertIn(want, err, f"{what}: stderr: {err}")
        self.assertNotIn("READY", out, what)
        for started in ("open files", "dataset copied", "serving", "listening"):
            self.assertNotIn(started, err, f"{what}: the server got as far as '{started}': {err}")
        if sock:
            self.assertFalse(os.path.exists(sock), f"{what}: the socket {sock} was made")
        if wrapped is not None and wrapped not in before:
            self.assertNotIn(wrapped, listening_ports(), f"{what}: something listens on the wrapped port {wrapped}")
        if status == USAGE:
            self.assertIn("run 'featstore help' for usage", err, what)

    def test_each_bad_address_is_a_usage_error_before_anything_starts(self):
        for i, (option, value, want, wrapped) in enumerate(BAD_SERVE):
            sock = os.path.join(DATA["dir"], f"refused-{i}.sock")  # one each: a failed case leaves its own
            with self.subTest(option=option, value=value):
                args = {"--socket": sock, "--metrics": "127.0.0.1:0"}
                args[option] = value
                flat = [x for kv in args.items() for x in kv]
                self.check_refused(flat, want, USAGE, wrapped, sock)

    def test_a_bad_listen_in_the_config_file_is_refused_naming_the_file(self):
        cfg = os.path.join(DATA["dir"], "addr.json")
        sock = os.path.join(DATA["dir"], "config.sock")
        with open(cfg, "w") as f:
            f.write('{"listen": "127.0.0.1:99999", "metrics": "127.0.0.1:0"}')
        self.check_refused(["--socket", sock, "--config", cfg],
                           f"\"listen\" in {cfg} '127.0.0.1:99999': port 99999 is outside 1..65535", 1, 34463, sock)
        # the command line wins over the file, and is checked as the command line
        self.check_refused(["--socket", sock, "--config", cfg, "--listen", "127.0.0.1:x"],
                           "--listen '127.0.0.1:x': port 'x' is not a number", USAGE, None, sock)


class ClientsTakeExactlyTheDocumentedURIs(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.sock = os.path.join(DATA["dir"], "live.sock")
        cls.proc, ready = fs_serve.start(ARGS.featstore, DATA["dataset"], "unix://" + cls.sock)
        cls.ready = ready
        cls.port = int(ready["grpc"].rsplit(":", 1)[1])

    @classmethod
    def tearDownClass(cls):
        assert fs_serve.stop(cls.proc) == 0

    def connects(self, uri):
        with featstore.connect(uri) as c:
            self.assertEqual(c.info().num_nodes, 2708, uri)

    def refused(self, uri, want):
        with self.assertRaises(featstore.Error, msg=uri) as caught:
            featstore.connect(uri).close()
        e = caught.exception
        self.assertEqual(e.status, featstore.Status.INVALID_ARGUMENT, f"{uri!r}: {e}")
        self.assertTrue(e.message.startswith(f"URI '{uri}': "), f"{uri!r}: {e.message}")
        self.assertIn(want, e.message, f"{uri!r}")

    def test_the_socket_was_given_as_a_unix_uri_and_served_as_its_path(self):
        self.assertEqual(self.ready["unix"], self.sock)

    def test_good_uris_connect(self):
        for uri in ("unix://" + self.sock, f"grpc://127.0.0.1:{self.port}", f"grpc://localhost:{self.port}"):
            with self.subTest(uri=uri):
                self.connects(uri)

    def test_an_ipv6_server_and_client(self):
        if not has_ipv6_loopback():
            self.skipTest("no IPv6 loopback (::1) on this machine")
        sock = os.path.join(DATA["dir"], "v6.sock")
        proc, ready = fs_serve.start(ARGS.featstore, DATA["dataset"], sock, ["--metrics", "[::1]:0"],
                                     listen="[::1]:0")
        try:
            self.assertTrue(ready["grpc"].startswith("[::1]:"), ready)
            self.assertNotEqual(int(ready["metrics"]), 0, ready)
            self.connects("grpc://" + ready["grpc"])
        finally:
            self.assertEqual(fs_serve.stop(proc), 0)

    def test_bad_uris_are_refused_by_fs_connect_with_the_parser_s_message(self):
        live = self.port
        cases = [
            (f"grpc://127.0.0.1:{live + 65536}", f"port {live + 65536} is outside 1..65535"),  # wraps to the live port
            ("grpc://127.0.0.1:0", "port 0 is outside 1..65535"),
            (f"grpc://127.0.0.1:{live}/featstore.v1", "'/featstore.v1' follows HOST:PORT"),
            (f"grpc://127.0.0.1:{live}?x=1", "'?x=1' follows HOST:PORT"),
            (f"grpc://127.0.0.1:{live} ", f"port '{live} ' is not a number"),
            (f"grpc://::1:{live}", "more than one ':'"),
            (f"grpc://[::1:{live}", "'[' without its ']'"),
            (f"grpc://:{live}", "the host is empty"),
            (f"grpcs://127.0.0.1:{live}x", "is not a number"),
            ("grpc://", "no HOST:PORT"),
            (f"http://127.0.0.1:{live}", "unknown scheme 'http://'"),
            (f"127.0.0.1:{live}", "no scheme"),
            (self.sock, "no scheme"),
            ("unix://live.sock", "unix:// is followed by an absolute path"),  # the live socket, from its directory
            ("unix:" + self.sock, "unix: is followed by // and an absolute path"),
            ("unix://" + "/tmp/" + "a" * 120, "a unix socket's path has at most 107"),
        ]
        here = os.getcwd()
        os.chdir(DATA["dir"])  # where "live.sock" would have found the live server
        try:
            for uri, want in cases:
                with self.subTest(uri=uri):
                    self.refused(uri, want)
        finally:
            os.chdir(here)

    def test_a_nul_byte_does_not_cut_a_uri_short(self):
        with self.assertRaises(featstore.Error) as caught:
            featstore.connect("unix://" + self.sock + "\0/elsewhere").close()
        self.assertEqual(caught.exception.status, featstore.Status.INVALID_ARGUMENT)
        self.assertIn("NUL", caught.exception.message)

    def test_featstore_stats_refuses_bad_uris_as_usage_errors(self):
        for uri, want in ((f"grpc://127.0.0.1:{self.port + 65536}", "is outside 1..65535"),
                          ("unix://live.sock", "unix:// is followed by an absolute path")):
            with self.subTest(uri=uri):
                done = subprocess.run([ARGS.featstore, "stats", uri], capture_output=True, text=True,
                                      cwd=DATA["dir"], timeout=LIVENESS_S)
                self.assertEqual(done.returncode, USAGE, done.stderr)
                self.assertIn(f"URI '{uri}': ", done.stderr)
                self.assertIn(want, done.stderr)
                self.assertEqual(done.stdout, "")
        done = subprocess.run([ARGS.featstore, "stats", f"grpc://127.0.0.1:{self.port}"], capture_output=True,
                              text=True, timeout=LIVENESS_S)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("featstore_requests_total", done.stdout)


def setUpModule():
    DATA["dir"] = tempfile.mkdtemp(prefix="featstore-addr-")
    DATA["dataset"] = fs_serve.import_cora(ARGS.featstore, os.path.join(DATA["dir"], "cora"))


def tearDownModule():
    shutil.rmtree(DATA["dir"], ignore_errors=True)


def main():
    global ARGS, featstore
    ARGS, rest = fs_serve.client_test_args(__doc__.split("\n")[0])
    import featstore
    fs_serve.run_tests("test_addr_serve", rest)


if __name__ == "__main__":
    main()
else:  # collected by pytest (tests/conftest.py): the build the environment names
    ARGS = fs_serve.pytest_args(())
    import featstore
