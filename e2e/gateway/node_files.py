"""The file commands of `clawmcp node` through the REAL OpenClaw gateway, driven with the real CLI
(`openclaw nodes invoke --node <id> --command <cmd> --params '<json>' --json`) and the gateway's
own `fs.listDir {nodeId, path}` RPC, which checks our answer against its closed result schema.
One PASS/FAIL row per check; nothing is skipped; our node is stopped by its PID (the gateway by
node_files.sh). Python 3.11 stdlib only. Reuses node_capture.py's plumbing (CLI, node, approval).

Setup: our node's HOME is a private dir; NodeFileRoots is one private root holding a known tree.
The harness gateway runs with plugins.enabled false, so its file-transfer plugin (the preflight
and approval policy) is not loaded: these checks drive the node commands directly, with the
preflight -> bound call sequence done by the suite itself, as the plugin would.

Checks, in order (a check whose prerequisite failed fails with the reason):
  gateway-allow   gateway.nodes.commands.allow [file.stat, file.fetch, file.write, dir.list,
                  dir.fetch] by hot reload, before our node connects
  declared        our pending surface declares the five commands and fs.listDir; approved
  fs-list-dir     the gateway's fs.listDir RPC with nodeId: our answer passes its schema; the
                  root's subdirectories, visible first, hidden last
  fetch           file.fetch: payload {ok, path, size, mimeType, base64, sha256, binding}, the bytes
                  and digest exact; maxBytes = size passes, size - 1 is {ok:false, FILE_TOO_LARGE}
                  in the payload of a successful invoke (as the real node host answers)
  fetch-sizes     file.fetch of 0, 1, 8191, 8192, 8193, 1 MiB + 1 and 8 MiB random bytes: size,
                  bytes and sha256 exact
  preflight-swap  file.fetch preflightOnly, the file swapped (rename), the bound call refused
                  CANONICAL_PATH_CHANGED in-band
  write           file.write then file.fetch reads it back; a sha256 mismatch refused in-band and
                  the file unchanged
  dir-list-fetch  dir.list pages (maxEntries 2) join to the sorted names; dir.fetch's tarBase64
                  unpacks (tarfile) to the tree with its contents
  outside-roots   file.stat of /etc/passwd: {ok:false, PATH_POLICY_DENIED} naming NodeFileRoots
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import sys
import tarfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import node_capture  # noqa: E402  (the script's own directory)
from checks import Failed, expect, report, suite_args, wait_for  # noqa: E402

OURS = "clawmcp-e2e-files-node"
FILES = ["file.stat", "file.fetch", "file.write", "dir.list", "dir.fetch"]


class FilesSuite(node_capture.Suite):
    def __init__(self, args):
        super().__init__(args)
        node_capture.OURS = OURS
        self.root = self.artifacts / "served"

    def setup_tree(self) -> None:
        for relative, content in (("a.txt", b"alpha\n"), ("sub/b.bin", bytes(range(256))), ("sub/deeper/c", b"")):
            path = self.root / "tree" / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        for name in ("visible", ".hidden"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        (self.root / "doc.txt").write_bytes(b"the authorized one")

    def start_ours(self) -> None:
        self.data.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.setup_tree()
        self.setting("NodeFileRoots", str(self.root))
        # The capture suite's start, with no display (files need none) and our name.
        self.display = ""
        super().start_ours()

    def payload(self, command: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.node_payload(command, params)[0]

    def refused(self, command: str, params: dict[str, Any], code: str) -> dict[str, Any]:
        payload = self.payload(command, params)
        expect(payload.get("ok") is False and payload.get("code") == code, f"{command}: expected {code}: {payload}")
        return payload

    # -- checks --------------------------------------------------------------------------------
    def gateway_allow(self) -> str:
        node_capture.ALLOW = FILES
        return super().gateway_allow()

    def declared(self) -> str:
        entry = wait_for("our node connected and pending in node.list",
                         lambda: (e := self.node_entry()) and e.get("connected") and e.get("pendingRequestId") and e, 60)
        self.ours_id = entry["nodeId"]
        pending = entry.get("pendingDeclaredCommands") or []
        expect(all(c in pending for c in FILES + ["fs.listDir"]), f"pendingDeclaredCommands: {pending}")
        request = self.approve_pending("files")
        wait_for("our surface approved", lambda: (e := self.node_entry()) and e.get("approvalState") == "approved", 30)
        return f"approved {request}; declared {[c for c in pending if c in FILES + ['fs.listDir']]}"

    def fs_list_dir(self) -> str:
        listing = self.gateway.rpc("fs.listDir", {"nodeId": self.ours_id, "path": str(self.root)})
        names = [e["name"] for e in listing.get("entries", [])]
        expect(names == ["tree", "visible", ".hidden"], f"entries {listing}")
        expect(listing.get("path") == str(self.root) and listing.get("parent") == str(self.root.parent), f"{listing}")
        return f"the gateway accepted {json.dumps(listing)[:300]}"

    def fetch(self) -> str:
        path = str(self.root / "tree" / "sub" / "b.bin")
        got = self.payload("file.fetch", {"path": path})
        keys = {"ok", "path", "size", "mimeType", "base64", "sha256", "binding"}
        expect(set(got) == keys, f"keys {sorted(got)}")
        data = base64.b64decode(got["base64"])
        expect(data == bytes(range(256)) and got["sha256"] == hashlib.sha256(data).hexdigest(), "bytes or digest differ")
        self.payload("file.fetch", {"path": path, "maxBytes": 256})
        too_large = self.refused("file.fetch", {"path": path, "maxBytes": 255}, "FILE_TOO_LARGE")
        return f"{got['size']} bytes {got['mimeType']} sha256 ok; maxBytes 255: {too_large['message']!r}"

    def fetch_sizes(self) -> str:
        # The e2e sizes of the file channel's suite that a unary fetch carries (the gateway opens the
        # channel only from its file-transfer plugin; unary file.fetch stops at 16 MiB), random bytes
        # compared by sha256 with what was written.
        sizes = [0, 1, 8191, 8192, 8193, (1 << 20) + 1, 8 << 20]
        for size in sizes:
            content = os.urandom(size)
            path = self.root / "visible" / f"sized-{size}.bin"
            path.write_bytes(content)
            got = self.payload("file.fetch", {"path": str(path), "maxBytes": max(size, 1)})
            data = base64.b64decode(got.get("base64", ""), validate=True)
            expect(got.get("size") == size and data == content, f"{size} bytes: got {got.get('size')}, {len(data)} decoded")
            expect(got.get("sha256") == hashlib.sha256(content).hexdigest(), f"{size} bytes: sha256 {got.get('sha256')}")
        return f"sizes {sizes}: bytes and sha256 exact"

    def preflight_swap(self) -> str:
        path = self.root / "doc.txt"
        preflight = self.payload("file.fetch", {"path": str(path), "preflightOnly": True})
        expect(preflight.get("preflightOnly") is True and preflight["binding"]["kind"] == "existing", f"{preflight}")
        other = self.root / "swap.txt"
        other.write_bytes(b"someone else's")
        os.replace(other, path)
        refused = self.refused("file.fetch", {"path": str(path), "expectedBinding": preflight["binding"],
                                              "expectedCanonicalPath": preflight["path"]}, "CANONICAL_PATH_CHANGED")
        return f"binding {preflight['binding']}; after the swap: {refused['message']!r}"

    def write(self) -> str:
        path = str(self.root / "written.txt")
        content = b"written through the gateway\n"
        written = self.payload("file.write", {"path": path, "contentBase64": base64.b64encode(content).decode(),
                                              "expectedSha256": hashlib.sha256(content).hexdigest()})
        expect(written.get("ok") is True and written.get("overwritten") is False, f"{written}")
        back = base64.b64decode(self.payload("file.fetch", {"path": path})["base64"])
        expect(back == content, f"read back {back!r}")
        mismatch = self.refused("file.write", {"path": path, "contentBase64": base64.b64encode(b"other").decode(),
                                               "overwrite": True, "expectedSha256": "0" * 64}, "INTEGRITY_FAILURE")
        expect(Path(path).read_bytes() == content, "a refused write changed the file")
        return f"wrote {written['size']} bytes mode {oct(Path(path).stat().st_mode & 0o777)}; mismatch: {mismatch['message'][:60]!r}"

    def dir_list_fetch(self) -> str:
        names, token = [], None
        while True:
            params: dict[str, Any] = {"path": str(self.root), "maxEntries": 2}
            if token:
                params["pageToken"] = token
            page = self.payload("dir.list", params)
            names += [e["name"] for e in page["entries"]]
            token = page.get("nextPageToken")
            if not token:
                break
        expect(names == sorted(names) and "tree" in names, f"names {names}")
        fetched = self.payload("dir.fetch", {"path": str(self.root / "tree")})
        archive = base64.b64decode(fetched["tarBase64"])
        expect(fetched["tarBytes"] == len(archive) and fetched["sha256"] == hashlib.sha256(archive).hexdigest(), "size/digest")
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            members = {m.name.rstrip("/"): m for m in tar.getmembers()}
            expect(tar.extractfile(members["sub/b.bin"]).read() == bytes(range(256)), "sub/b.bin differs")
            expect(tar.extractfile(members["a.txt"]).read() == b"alpha\n", "a.txt differs")
        expect(fetched["entries"] == ["a.txt", "sub", "sub/b.bin", "sub/deeper", "sub/deeper/c"], f"{fetched['entries']}")
        return f"dir.list {names}; dir.fetch {fetched['tarBytes']} bytes, entries {fetched['entries']}"

    def outside_roots(self) -> str:
        refused = self.refused("file.stat", {"path": "/etc/passwd"}, "PATH_POLICY_DENIED")
        expect("NodeFileRoots" in refused["message"], f"{refused}")
        return refused["message"][:120]

    def run(self) -> int:
        try:
            self.check("gateway-allow", self.gateway_allow)
            self.start_ours()
            self.check("declared", self.declared, ("gateway-allow",))
            for name, body in (("fs-list-dir", self.fs_list_dir), ("fetch", self.fetch),
                               ("fetch-sizes", self.fetch_sizes),
                               ("preflight-swap", self.preflight_swap), ("write", self.write),
                               ("dir-list-fetch", self.dir_list_fetch), ("outside-roots", self.outside_roots)):
                self.check(name, body, ("declared",))
        except Failed as err:
            self.rows.append(("setup", False, str(err)))
        finally:
            for problem in self.stop():
                self.rows.append(("stop", False, problem))
        return report(self.rows, "node-files", self.artifacts / "node-files.json")


def main() -> int:
    return FilesSuite(suite_args(__doc__)).run()


if __name__ == "__main__":
    sys.exit(main())
