#!/usr/bin/env python3
"""The preload library is one that the loader can insert into a program.

macOS: dyld inserts only a dylib (MH_DYLIB) through DYLD_INSERT_LIBRARIES and refuses a bundle
(MH_BUNDLE, what meson makes of a shared_module there). Checked from the build's description
(meson-info: a shared library, not a shared module), whatever the host, and from the file's
Mach-O header where it is one (on a Mac).

  check_preload_kind.py BUILD_DIR PRELOAD_FILE
"""
import json
import struct
import sys
from pathlib import Path

MH_MAGIC_64 = 0xFEEDFACF
MH_FILETYPES = {6: "MH_DYLIB", 8: "MH_BUNDLE"}


def main() -> int:
    build_dir, preload = Path(sys.argv[1]), Path(sys.argv[2])
    targets = json.loads((build_dir / "meson-info" / "intro-targets.json").read_text())
    kinds = [t["type"] for t in targets if t["name"] == "zxsampler-preload"]
    if kinds != ["shared library"]:
        print(f"zxsampler-preload is built as {kinds}, not a shared library (a dylib on macOS)")
        return 1
    header = preload.read_bytes()[:16]
    if len(header) == 16 and struct.unpack("<I", header[:4])[0] == MH_MAGIC_64:
        filetype = struct.unpack("<I", header[12:16])[0]
        if filetype != 6:
            print(f"{preload}: Mach-O file type {MH_FILETYPES.get(filetype, filetype)}, not MH_DYLIB")
            return 1
        print(f"{preload}: MH_DYLIB")
    print("zxsampler-preload: a shared library")
    return 0


if __name__ == "__main__":
    sys.exit(main())
