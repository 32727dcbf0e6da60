#!/usr/bin/env python3
"""Writes a damaged copy of a safetensors checkpoint, for the command-line tests of bad input.

edit_checkpoint.py IN OUT truncate BYTES        keep only the first BYTES bytes
edit_checkpoint.py IN OUT header TEXT           replace the JSON header by TEXT
edit_checkpoint.py IN OUT meta KEY VALUE        set a __metadata__ entry
edit_checkpoint.py IN OUT shape NAME D0,D1,...  change a tensor's shape (its data stays)
edit_checkpoint.py IN OUT rename NAME NEW       rename a tensor
edit_checkpoint.py IN OUT nan NAME              set the first value of a float32 tensor to NaN
"""
import json
import struct
import sys


def main():
    src, dst, action, *args = sys.argv[1:]
    data = open(src, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    if action == "truncate":
        open(dst, "wb").write(data[: int(args[0])])
        return
    if action == "header":
        text = args[0].encode()
        open(dst, "wb").write(struct.pack("<Q", len(text)) + text + body)
        return
    if action == "meta":
        header["__metadata__"][args[0]] = args[1]
    elif action == "shape":
        header[args[0]]["shape"] = [int(d) for d in args[1].split(",")]
    elif action == "nan":
        start = header[args[0]]["data_offsets"][0]
        body = body[:start] + struct.pack("<f", float("nan")) + body[start + 4 :]
    elif action == "rename":
        header[args[1]] = header.pop(args[0])
    else:
        sys.exit(f"unknown action {action}")
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    open(dst, "wb").write(struct.pack("<Q", len(text)) + text + body)


if __name__ == "__main__":
    main()
