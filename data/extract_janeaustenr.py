#!/usr/bin/env python3
"""Extracts a novel from Debian's r-cran-janeaustenr package as plain text, without R.

    apt-get download r-cran-janeaustenr
    dpkg-deb -x r-cran-janeaustenr_*_all.deb pkg
    python3 data/extract_janeaustenr.py pkg persuasion > persuasion.txt

The package keeps its data in R's lazy-load database: <pkg>/usr/lib/R/site-library/
janeaustenr/data/Rdata.rdx (a gzip-compressed serialised index; its "variables" entry maps
each object's name to (offset, length) in Rdata.rdb) and Rdata.rdb (each object: a 4-byte
big-endian length, then zlib data holding an XDR serialisation). A novel is a character
vector, one element per line; the output is the lines joined with newlines. Only the few
serialisation types these files use are read.
"""
import gzip
import pathlib
import struct
import sys
import zlib

NIL, SYM, LIST, CHAR, LGL, INT, REAL, STR, VEC, REF = 254, 1, 2, 9, 10, 13, 14, 16, 19, 255
DATA = "usr/lib/R/site-library/janeaustenr/data/Rdata"


class Reader:
    def __init__(self, data):
        if data[:2] != b"X\n":
            raise ValueError("not an XDR serialisation")
        self.data, self.pos, self.refs = data, 2, []
        version = self.int()
        self.int(), self.int()  # R version that wrote it, oldest R version that reads it
        if version == 3:
            length = self.int()  # then the native encoding's name
            self.pos += length

    def int(self):
        (value,) = struct.unpack(">i", self.data[self.pos:self.pos + 4])
        self.pos += 4
        return value

    def numbers(self, code, size):
        n = self.int()
        values = struct.unpack(f">{n}{code}", self.data[self.pos:self.pos + size * n])
        self.pos += size * n
        return list(values)

    def read(self):
        """The next object: str, list, or dict for a vector with names; None for NULL."""
        flags = self.int()
        kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind == NIL:
            return None
        if kind == REF:
            return self.refs[(flags >> 8) - 1]
        if kind == SYM:
            name = self.read()
            self.refs.append(name)
            return name
        if kind == CHAR:
            n = self.int()
            if n == -1:
                return None  # NA
            text = self.data[self.pos:self.pos + n].decode("utf-8")
            self.pos += n
            return text
        if kind == LIST:  # a pairlist cell: (attributes), (tag), car, cdr
            if has_attr:
                self.read()
            tag = self.read() if has_tag else None
            car = self.read()
            return [(tag, car)] + (self.read() or [])
        if kind in (STR, VEC):
            value = [self.read() for _ in range(self.int())]
        elif kind in (LGL, INT):
            value = self.numbers("i", 4)
        elif kind == REAL:
            value = self.numbers("d", 8)
        else:
            raise ValueError(f"serialisation type {kind} is not supported here")
        attributes = dict(self.read() or []) if has_attr else {}
        if "names" in attributes:
            return dict(zip(attributes["names"], value))
        return value


def lines_of(package_root, name):
    base = pathlib.Path(package_root) / DATA
    variables = Reader(gzip.open(f"{base}.rdx").read()).read()["variables"]
    if name not in variables:
        raise SystemExit(f"no object {name!r}; the package has: {', '.join(sorted(variables))}")
    offset, length = variables[name]
    with open(f"{base}.rdb", "rb") as db:
        db.seek(offset)
        chunk = db.read(length)
    (size,) = struct.unpack(">I", chunk[:4])
    data = zlib.decompress(chunk[4:])
    if len(data) != size:
        raise ValueError(f"{name}: {len(data)} bytes after decompression, expected {size}")
    lines = Reader(data).read()
    if not all(isinstance(line, str) for line in lines):
        raise SystemExit(f"{name!r} is not a character vector")
    return lines


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__)
    sys.stdout.write("\n".join(lines_of(argv[1], argv[2])) + "\n")


if __name__ == "__main__":
    main(sys.argv)
