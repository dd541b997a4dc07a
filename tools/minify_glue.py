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

Then the module's import and closure-export names (wasm-bindgen's hashed
`__wbg_<name>_<hash>` and 100-to-329-character trampoline names) become
one- or two-letter names in the wasm and the glue alike: 4.7 KB less gzip
for the page on 2026-12-07 (270,338 -> 267,475 B of wasm, 5,282 -> 3,381 B
of glue).

Trunk runs this after every build (Trunk.toml's post_build hook) in its
staging directory; debug builds are left as they are. Run by hand, it
minifies dist/."""

import base64
import hashlib
import itertools
import os
import pathlib
import re
import string
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
    for section, start, body, end in sections(data):
        if section == 7:
            count, p = leb(data, body)
            entries = []
            for _ in range(count):
                entry = p
                name, p = name_at(data, p)
                _, p = leb(data, p + 1)  # past its kind: the index
                entries.append((name, entry, p))
            return (start, end), entries
    return (len(data), len(data)), []


def uleb(n: int) -> bytes:
    """`n` as unsigned LEB128."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def name_bytes(text: str) -> bytes:
    """`text` as a wasm name (`name_at` reads it back)."""
    raw = text.encode()
    return uleb(len(raw)) + raw


def with_section(data: bytes, span: tuple[int, int], section: int, entries: list[bytes]) -> bytes:
    """The module with the section at `span` replaced by one of `entries`."""
    content = uleb(len(entries)) + b"".join(entries)
    return data[: span[0]] + bytes([section]) + uleb(len(content)) + content + data[span[1] :]


def without_exports(data: bytes, dropped: list[str]) -> bytes:
    """The module with the named exports left out of its export section.
    (wasm-metadce would do it too, but its output's function order
    compresses 7 KB worse.)"""
    span, entries = export_section(data)
    return with_section(data, span, 7, [data[a:b] for name, a, b in entries if name not in dropped])


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


def sections(data: bytes) -> list[tuple[int, int, int, int]]:
    """Each section of a wasm module: its id, start, body start and end."""
    at, out = 8, []
    while at < len(data):
        size, body = leb(data, at + 1)
        out.append((data[at], at, body, body + size))
        at = body + size
    return out


def name_at(data: bytes, at: int) -> tuple[str, int]:
    """A wasm name (length-prefixed UTF-8) at `at`, and where it ends."""
    length, at = leb(data, at)
    return data[at : at + length].decode(), at + length


def past_limits(data: bytes, at: int) -> int:
    flags = data[at]
    _, at = leb(data, at + 1)
    return leb(data, at)[1] if flags & 1 else at


def past_import(data: bytes, at: int) -> int:
    """Past an import's description (function, table, memory, global, tag)."""
    kind, at = data[at], at + 1
    if kind in (0, 4):
        return leb(data, at + (kind == 4))[1]
    if kind == 1:
        return past_limits(data, at + 1)
    if kind == 2:
        return past_limits(data, at)
    return at + 2


def short_names():
    """a, b, ..., Z, aa, ab, ...: JS identifiers, shortest first."""
    letters = string.ascii_letters
    for size in range(1, 4):
        for chars in itertools.product(letters, repeat=size):
            yield "".join(chars)


def shorten_names(js: pathlib.Path, wasm: pathlib.Path) -> bool:
    """Rename the wasm module's imports (wasm-bindgen's `__wbg_<name>_<hash>`
    functions and the glue's module name) and its closure-trampoline exports
    (`wasm_bindgen_<hash>___convert__closures...`, up to 329 characters) to
    one- or two-letter names, in the wasm and the glue alike: their hashes
    do not compress, and the browser needs them only to match the two up.
    False (nothing changed) where a name is missing from the glue."""
    data, glue = wasm.read_bytes(), js.read_text(encoding="utf-8")
    parts = {sid: (start, body, end) for sid, start, body, end in sections(data)}
    if 2 not in parts or 7 not in parts:
        return False
    names = short_names()
    renamed: dict[str, str] = {}
    # Imports: (module, name, description) each.
    start, body, end = parts[2]
    count, at = leb(data, body)
    imports = []
    for _ in range(count):
        module, at = name_at(data, at)
        field, at = name_at(data, at)
        desc_end = past_import(data, at)
        imports.append((module, field, data[at:desc_end]))
        at = desc_end
    modules = {m for m, _, _ in imports}
    module_names = {m: f"m{i}" for i, m in enumerate(sorted(modules))}
    for _, field, _ in imports:
        renamed.setdefault(field, next(names))
    _, exports = export_section(data)
    long_exports = [n for n, _, _ in exports if n.startswith("wasm_bindgen_")]
    for n in long_exports:
        renamed[n] = next(names)
    missing = [n for n in renamed if not re.search(rf"\b{n}\b", glue)]
    missing += [m for m in modules if f'"{m}"' not in glue]
    if missing:
        print(f"{js.name}: {missing[0]} not in the glue; names left as they are", file=sys.stderr)
        return False
    named = [name_bytes(module_names[m]) + name_bytes(renamed[f]) + desc for m, f, desc in imports]
    data = with_section(data, (start, end), 2, named)
    # The export section moved with the import section's new length.
    span, entries = export_section(data)
    named = [
        name_bytes(renamed.get(name, name)) + data[name_at(data, a)[1] : b]
        for name, a, b in entries
    ]
    data = with_section(data, span, 7, named)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, renamed)) + r")\b")
    glue = pattern.sub(lambda m: renamed[m.group(1)], glue)
    for module, short in module_names.items():
        glue = glue.replace(f'"{module}"', f'"{short}"')
    wasm.write_bytes(data)
    js.write_text(glue, encoding="utf-8")
    print(f"shortened {len(renamed)} import and export names: wasm -> {len(data)} bytes")
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
        # Both run (no short circuit): each says whether it changed the files.
        changed = js.exists() and drop_stream_classes(js, wasm)
        changed = (js.exists() and shorten_names(js, wasm)) or changed
        if changed:
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
