#!/usr/bin/env python3
"""Minify wasm-bindgen's JS glue with terser (Trunk minifies the HTML and the
CSS but not the glue) and update its subresource-integrity hash in
index.html, which Trunk computed before (#14's size budget).

Trunk runs this after every build (Trunk.toml's post_build hook) in its
staging directory; debug builds are left as they are. Run by hand, it
minifies dist/."""

import base64
import hashlib
import os
import pathlib
import subprocess
import sys

DIST = pathlib.Path(os.environ.get("TRUNK_STAGING_DIR", "dist"))
TERSER = pathlib.Path(__file__).resolve().parent.parent / "node_modules/.bin/terser"


def sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def main() -> int:
    if os.environ.get("TRUNK_PROFILE", "release") != "release":
        return 0
    index = DIST / "index.html"
    html = index.read_text(encoding="utf-8")
    for js in sorted(DIST.glob("*.js")):
        before = js.read_bytes()
        subprocess.run(
            [str(TERSER), str(js), "--module", "--compress", "passes=2", "--mangle", "-o", str(js)],
            check=True,
        )
        after = js.read_bytes()
        old, new = sri(before), sri(after)
        if old not in html:
            print(f"{index} has no integrity hash for {js.name}", file=sys.stderr)
            return 1
        html = html.replace(old, new)
        print(f"minified {js.name}: {len(before)} -> {len(after)} bytes")
    index.write_text(html, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
