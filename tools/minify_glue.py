#!/usr/bin/env python3
"""Minify wasm-bindgen's JS glue with terser (Trunk minifies the HTML and the
CSS but not the glue) and update its subresource-integrity hash in
index.html, which Trunk computed before (#14's size budget).

Before that, drop what the page exports and never uses: Leptos always turns
on server_fn's `browser` feature, whose wasm-streams crate exports three JS
classes (IntoUnderlyingByteSource, IntoUnderlyingSink, IntoUnderlyingSource)
for server functions' streams; this page has no server functions. Their
classes leave the glue and their exports the wasm, and wasm-opt (the pinned
binaryen's) removes the code only they reached (#56, #59).

Trunk runs this after every build (Trunk.toml's post_build hook) in its
staging directory; debug builds are left as they are. Run by hand, it
minifies dist/."""

import base64
import hashlib
import os
import pathlib
import re
import subprocess
import sys

DIST = pathlib.Path(os.environ.get("TRUNK_STAGING_DIR", "dist"))
TERSER = pathlib.Path(__file__).resolve().parent.parent / "node_modules/.bin/terser"


# The wasm features the page's module uses (wasm-opt must be told).
FEATURES = [
    "--enable-bulk-memory",
    "--enable-mutable-globals",
    "--enable-reference-types",
    "--enable-nontrapping-float-to-int",
    "--enable-sign-ext",
    "--enable-multivalue",
]
STREAM_CLASSES = ("IntoUnderlyingByteSource", "IntoUnderlyingSink", "IntoUnderlyingSource")
# The second wasm-opt run: -Os as Trunk ran it (index.html), then the control
# flow flattened and re-looped between two more -Os rounds, twice: the first
# round took 1.3 KB more gzip off the page (270,398 -> 269,085 B of wasm on
# 2026-12-07; -Os again alone gained nothing, -Oz and -O4 lost), the second
# 0.46 KB more (280,095 -> 279,631 B for the page on 2026-12-07; a third
# round gained back; --merge-similar-functions lost); ~12 s more build each.
ROUND = ["--flatten", "--rereloop", "-Os", "-Os"]
# The producers and target-features sections name the toolchain for linkers
# and tools; the browser reads neither (the glue never asks for a custom
# section): 0.2 KB of the page's wasm.
STRIP = ["--strip-producers", "--strip-target-features"]
WASM_OPT_PASSES = ["-Os", *ROUND, *ROUND, *STRIP]


def leb(data: bytes, at: int) -> tuple[int, int]:
    """An unsigned LEB128 number at `at`, and where it ends."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def export_section(data: bytes) -> tuple[tuple[int, int], list[tuple[str, int, int]]]:
    """Where a wasm module's export section (id 7) starts and ends, and its
    entries: each one's name, start and end."""
    at = 8
    while at < len(data):
        section, (size, body) = data[at], leb(data, at + 1)
        if section == 7:
            count, p = leb(data, body)
            entries = []
            for _ in range(count):
                start = p
                length, p = leb(data, p)
                name = data[p : p + length].decode()
                _, p = leb(data, p + length + 1)  # past the name and its kind: the index
                entries.append((name, start, p))
            return (at, body + size), entries
        at = body + size
    return (len(data), len(data)), []


def uleb(n: int) -> bytes:
    """`n` as unsigned LEB128."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def without_exports(data: bytes, dropped: list[str]) -> bytes:
    """The module with the named exports left out of its export section.
    (wasm-metadce would do it too, but its output's function order
    compresses 7 KB worse.)"""
    (start, end), entries = export_section(data)
    kept = [data[a:b] for name, a, b in entries if name not in dropped]
    content = uleb(len(kept)) + b"".join(kept)
    return data[:start] + bytes([7]) + uleb(len(content)) + content + data[end:]


def drop_stream_classes(js: pathlib.Path, wasm: pathlib.Path) -> bool:
    """Take the wasm-streams classes out of `js` and their exports out of
    `wasm`; False (nothing changed) where the glue does not hold them as
    expected."""
    glue = js.read_text(encoding="utf-8")
    for name in STREAM_CLASSES:
        block = re.compile(
            rf"export class {name} \{{.*?\n}}\n(if \(Symbol\.dispose\) {name}\.prototype\[[^\n]*\n)?",
            re.S,
        )
        registry = re.compile(rf"const {name}Finalization = [^;]*;\n", re.S)
        glue, classes = block.subn("", glue, count=1)
        glue, registries = registry.subn("", glue, count=1)
        if classes != 1 or registries != 1:
            print(f"{js.name}: no {name} class as expected; left as it is", file=sys.stderr)
            return False
    data = wasm.read_bytes()
    dropped = [name for name, _, _ in export_section(data)[1] if "intounderlying" in name]
    if not dropped or any(e in glue for e in dropped):
        print(
            f"{wasm.name}: stream exports still used or absent; left as they are", file=sys.stderr
        )
        return False
    wasm.write_bytes(without_exports(data, dropped))
    # wasm-opt removes what only they reached (`WASM_OPT_PASSES`).
    subprocess.run(
        ["wasm-opt", *WASM_OPT_PASSES, str(wasm), "-o", str(wasm), *FEATURES], check=True
    )
    js.write_text(glue, encoding="utf-8")
    print(
        f"dropped the wasm-streams classes: {len(dropped)} exports, wasm {len(data)} -> {wasm.stat().st_size} bytes"
    )
    return True


def sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def main() -> int:
    if os.environ.get("TRUNK_PROFILE", "release") != "release":
        return 0
    index = DIST / "index.html"
    html = index.read_text(encoding="utf-8")
    for wasm in sorted(DIST.glob("train-planner-web-*_bg.wasm")):
        js = wasm.with_name(wasm.name.removesuffix("_bg.wasm") + ".js")
        before = (wasm.read_bytes(), js.read_bytes() if js.exists() else b"")
        if js.exists() and drop_stream_classes(js, wasm):
            for old, now in zip(before, (wasm.read_bytes(), js.read_bytes()), strict=True):
                html = html.replace(sri(old), sri(now))
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
