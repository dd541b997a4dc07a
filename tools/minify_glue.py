#!/usr/bin/env python3
"""Minify wasm-bindgen's JS glue in dist/ with terser (Trunk minifies the
HTML and the CSS but not the glue) and update its subresource-integrity hash
in dist/index.html, which Trunk computed before. Run by `./dev` after
`trunk build --release` (#14's size budget)."""

import base64
import hashlib
import pathlib
import re
import subprocess
import sys

DIST = pathlib.Path("dist")
TERSER = pathlib.Path("node_modules/.bin/terser")


def sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def main() -> int:
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
