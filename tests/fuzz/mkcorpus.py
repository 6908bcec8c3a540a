#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Seed corpus for fuzz_rx from packet captures.

mkcorpus.py OUTDIR CAPTURE...: reads pcap or pcapng captures (Ethernet,
IPv4/IPv6, UDP port 4791; URXE_PCAP writes them, so does tcpdump), takes
the RoCE bytes (the UDP payload: BTH .. ICRC) and writes small inputs in
fuzz_rx's record format (see fuzz_rx.c): for each capture, one input per
opcode seen, a few runs of consecutive frames of one direction (a
multi-packet SEND, a READ and its responses), one of raw frames, one with
the frames interleaved with wire operations and clock jumps.  Requests go
to rc1 (or uc1, ud), responses to rc0, with the PSN the QP expects and,
for RETH/AtomicETH, keys of the harness's MRs.  A few hand-made inputs
(wire operations and timers alone) complete the set.  Names are
<capture>-<what>, so running it again replaces its own files only.
"""
import os
import struct
import sys

ROCE_PORT = 4791
MAX_INPUT = 8192           # fuzz_rx.sh runs with -max_len=8192

# fuzz_rx record header: flag, mode, 16-bit little-endian length
T_RC0, T_RC1, T_UC0, T_UC1, T_UD, T_KEEP, T_WIRE, T_CLOCK = range(8)
F_RAW, F_TRANSPORT = 0x08, 0x10
M_PSN_EXPECTED, M_KEYS = 0x01, 0x04

RETH_OPS = {0x06, 0x0a, 0x0b, 0x0c}   # WRITE first/only(+imm), READ request
ATOMIC_OPS = {0x13, 0x14}
RESP_OPS = {0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12}


def pcap_frames(data):
    """Link-layer frames of a classic pcap file."""
    magic = struct.unpack('<I', data[:4])[0]
    end = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
    linktype = struct.unpack(end + 'I', data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        caplen = struct.unpack(end + 'I', data[off + 8:off + 12])[0]
        yield linktype, data[off + 16:off + 16 + caplen]
        off += 16 + caplen


def pcapng_frames(data):
    """Link-layer frames of a pcapng file (enhanced packet blocks)."""
    off, linktypes = 0, []
    while off + 12 <= len(data):
        btype, blen = struct.unpack('<II', data[off:off + 8])
        if btype == 1:                       # interface description
            linktypes.append(struct.unpack('<H', data[off + 8:off + 10])[0])
        elif btype == 6:                     # enhanced packet
            ifc, _, _, caplen = struct.unpack('<IIII', data[off + 8:off + 24])
            yield linktypes[ifc], data[off + 28:off + 28 + caplen]
        off += blen


def roce_payloads(path):
    data = open(path, 'rb').read()
    frames = pcapng_frames(data) if data[:4] == b'\x0a\x0d\x0d\x0a' \
        else pcap_frames(data)
    for linktype, f in frames:
        if linktype == 1:                    # Ethernet
            ip = f[14:]
        elif linktype in (101, 228, 229):    # raw IP
            ip = f
        elif linktype == 113:                # Linux cooked
            ip = f[16:]
        else:
            continue
        if not ip:
            continue
        if ip[0] >> 4 == 4:
            if ip[9] != 17:
                continue
            udp = ip[(ip[0] & 15) * 4:]
        elif ip[0] >> 4 == 6:
            if ip[6] != 17:
                continue
            udp = ip[40:]
        else:
            continue
        if len(udp) < 8 or struct.unpack('>H', udp[2:4])[0] != ROCE_PORT:
            continue
        roce = bytes(udp[8:struct.unpack('>H', udp[4:6])[0]])
        if len(roce) >= 16:
            yield roce


def record(roce, raw=False):
    """One frame record aimed at the QP that would take it."""
    op = roce[0]
    tr = op & 0xe0
    if tr == 0x60:
        flag, mode = T_UD, 0
    elif tr == 0x20:
        flag, mode = T_UC1, M_PSN_EXPECTED
    else:
        flag = T_RC0 if op & 0x1f in RESP_OPS else T_RC1
        mode = M_PSN_EXPECTED
        if op & 0x1f in RETH_OPS | ATOMIC_OPS:
            mode |= M_KEYS
    if raw:
        flag |= F_RAW
    return struct.pack('<BBH', flag, mode, len(roce)) + roce


def wire(count=0, action=0):
    return struct.pack('<BBH', T_WIRE, 0, count | action << 8)


def clock(units_50us):
    return struct.pack('<BBH', T_CLOCK, 0, units_50us)


def bounded(records):
    out = b''
    for r in records:
        if len(out) + len(r) > MAX_INPUT:
            break
        out += r
    return out


def runs(frames):
    """Runs of consecutive frames going one way (same destination QP)."""
    run = []
    for f in frames:
        if run and f[5:8] != run[-1][5:8]:
            yield run
            run = []
        run.append(f)
    if run:
        yield run


def inputs_for(name, frames):
    out = {}
    seen = set()
    for f in frames:                         # one input per opcode
        if f[0] not in seen:
            seen.add(f[0])
            out['%s-op%02x' % (name, f[0])] = record(f)
    kept = set()
    for r in runs(frames):                   # a few multi-frame runs
        ops = tuple(f[0] for f in r[:6])
        if len(r) < 2 or len(kept) == 4 or ops in kept:
            continue
        out['%s-run%d' % (name, len(kept))] = bounded(record(f) for f in r[:6])
        kept.add(ops)
    out['%s-raw' % name] = bounded(record(f, raw=True) for f in frames[:3])
    mixed = []
    for i, f in enumerate(frames[:6]):
        mixed.append(record(f))
        mixed.append(wire() if i % 2 else clock(20 * (i + 1)))
    out['%s-mixed' % name] = bounded(mixed)
    return out


def synthetic():
    return {
        # Real traffic alone: delivered, then lost, duplicated, reordered.
        'syn-wire-inorder': wire() * 4,
        'syn-wire-loss': wire(3, 1) + wire() + clock(100) + wire(),
        'syn-wire-dup': wire(4, 2) + wire() + wire(),
        'syn-wire-reorder': wire(2, 3) + wire(5, 3) + wire() + wire(),
        # Timers: fast retransmission, the IBA timeout, retries exhausted.
        'syn-timeout': clock(100) + wire(0, 1) + clock(2000) + wire(0, 1) +
                       clock(20000) + wire(0, 1) + clock(65535),
    }


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    inputs = synthetic()
    for path in sys.argv[2:]:
        name = os.path.basename(path).split('.')[0]
        frames = list(roce_payloads(path))
        if not frames:
            print('%s: no RoCE frames' % path, file=sys.stderr)
            continue
        inputs.update(inputs_for(name, frames))
    for name, data in sorted(inputs.items()):
        with open(os.path.join(outdir, name), 'wb') as f:
            f.write(data)
    print('%d inputs, %d bytes' % (len(inputs),
                                   sum(len(d) for d in inputs.values())))


if __name__ == '__main__':
    main()
