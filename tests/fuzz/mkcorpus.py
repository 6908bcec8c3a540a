#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Seed corpus for fuzz_rx from packet captures.

mkcorpus.py OUTDIR [CAPTURE...]: reads pcap or pcapng captures (Ethernet,
IPv4/IPv6, UDP port 4791; URXE_PCAP writes them, so does tcpdump), takes
the RoCE bytes (the UDP payload: BTH .. ICRC) and writes small inputs in
fuzz_rx's record format (see fuzz_rx.c): for each capture, one input per
opcode seen, a few runs of consecutive frames of one direction (a
multi-packet SEND, a READ and its responses), one of raw frames, one with
the frames interleaved with wire operations and clock jumps.  Requests go
to rc1 (or uc1, ud), responses to rc0, with the PSN the QP expects and,
for RETH/AtomicETH, keys of the harness's MRs.  A few hand-made inputs
(wire operations and timers alone) and the XRC inputs (xrc-*: frames
built here for the XRC pair, see xrc_inputs()) complete the set; without
captures, only these are written.  Names are <capture>-<what>, so running
it again replaces its own files only.
"""
import os
import struct
import sys

ROCE_PORT = 4791
MAX_INPUT = 8192           # fuzz_rx.sh runs with -max_len=8192

# fuzz_rx record header: flag, mode, 16-bit little-endian length
T_RC0, T_RC1, T_UC0, T_UC1, T_UD, T_KEEP, T_WIRE, T_CLOCK = range(8)
F_RAW, F_TRANSPORT = 0x08, 0x10
# DestQP as is, transport made XRC: requests go to tgt, answers to ini
T_XRC = T_KEEP | F_TRANSPORT
M_PSN_EXPECTED, M_PSN_REL, M_PSN_PREV, M_KEYS = 0x01, 0x02, 0x03, 0x04
# XRCETH reserved byte, low 2 bits: the harness names this XRC SRQ
SEL_ASIS, SEL_XS0, SEL_XS1, SEL_XSB = range(4)
# MR index in an R_Key the harness fixes up (R_Key % 5): MR0 is of xs0's
# PD, MR4 of xs1's
MR0, MR4 = 0, 4

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


def clock(units_50us, starve=False, toggle_xs1=False):
    # toggle_xs1: bit 4, bits 5-7 clear
    flag = T_CLOCK | (F_RAW if starve else 0) | \
        (F_TRANSPORT if toggle_xs1 else 0)
    return struct.pack('<BBH', flag, 0, units_50us)


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


# ---- XRC: frames for the ini -> tgt pair, built here ----

XRC = 0xa0
OP = dict(SEND_FIRST=0x00, SEND_MIDDLE=0x01, SEND_LAST=0x02,
          SEND_LAST_IMM=0x03, SEND_ONLY=0x04, SEND_ONLY_IMM=0x05,
          WRITE_FIRST=0x06, WRITE_MIDDLE=0x07, WRITE_LAST=0x08,
          WRITE_LAST_IMM=0x09, WRITE_ONLY=0x0a, WRITE_ONLY_IMM=0x0b,
          READ_REQ=0x0c, READ_RESP_FIRST=0x0d, READ_RESP_MIDDLE=0x0e,
          READ_RESP_LAST=0x0f, READ_RESP_ONLY=0x10, ACK=0x11, ATOMIC_ACK=0x12,
          CMP_SWAP=0x13, FETCH_ADD=0x14, SEND_ONLY_INV=0x17)


def bth(opcode, ackreq=True, se=False, dqpn=0, psn=0):
    """BTH; DestQP and PSN are usually the harness's to fill in."""
    return struct.pack('>BBHI', opcode, 0x80 if se else 0, 0xffff, dqpn) + \
        struct.pack('>I', (0x80000000 if ackreq else 0) | psn)


def xreq(op, sel, payload=b'', reth=None, atomic=None, imm=False, inv=False,
         ackreq=True, srqn=0, transport=XRC):
    """An XRC request: BTH XRCETH [RETH] [AtomicETH] [ImmDt] [IETH] data ICRC.
    reth = (offset, mr, dma length); atomic = (offset, mr, swap/add, cmp)."""
    f = bth(transport | OP[op], ackreq, se=OP[op] in (0x04, 0x05))
    f += bytes([sel]) + srqn.to_bytes(3, 'big')
    if reth:
        f += struct.pack('>QII', *reth)
    if atomic:
        f += struct.pack('>QIQQ', *atomic)
    if imm:
        f += b'\x12\x34\x56\x78'
    if inv:
        f += struct.pack('>I', 0x1234)
    return f + payload + b'\0' * 4


def xresp(op, syndrome=0x1f, payload=b'', orig=None):
    """An XRC answer to ini: BTH [AETH] [AtomicAckETH] data ICRC."""
    f = bth(XRC | OP[op], ackreq=False)
    if op != 'READ_RESP_MIDDLE':
        f += struct.pack('>I', syndrome << 24)
    if orig is not None:
        f += struct.pack('>Q', orig)
    return f + payload + b'\0' * 4


def rec(frame, flag=T_XRC, mode=M_PSN_EXPECTED | M_KEYS, repeat=0):
    return struct.pack('<BBH', flag | repeat << 5, mode, len(frame)) + frame


def data(n, seed=1):
    return bytes((i * 7 + seed) & 0xff for i in range(n))


def xrc_inputs():
    """Inputs for the XRC pair: tgt's SRQ lookup (xs0, xs1, another
    domain's, no SRQ), messages switching SRQs, a middle naming another,
    RNR on an empty SRQ, READ and atomics with keys of the SRQ's PD or
    not, duplicates and replay, an SRQ leaving mid-message, and answers
    to ini (ACK, NAKs, READ responses, atomic ACK)."""
    def send(sel, n=64, repeat=0, **kw):
        return rec(xreq('SEND_ONLY', sel, data(n), **kw), repeat=repeat)

    deliver = wire() + wire()
    out = {
        'xrc-send-xs0': send(SEL_XS0) + deliver,
        'xrc-send-xs1': send(SEL_XS1, 200) + deliver,
        'xrc-send-multi': rec(xreq('SEND_FIRST', SEL_XS0, data(1024))) +
            rec(xreq('SEND_MIDDLE', SEL_XS0, data(1024))) +
            rec(xreq('SEND_LAST_IMM', SEL_XS0, data(100), imm=True)) +
            rec(xreq('SEND_FIRST', SEL_XS1, data(1024, 3))) +
            rec(xreq('SEND_LAST', SEL_XS1, data(1024, 4))) + deliver,
        # A message names one SRQ throughout: a middle naming another is
        # an invalid request.
        'xrc-middle-other-srq':
            rec(xreq('SEND_FIRST', SEL_XS0, data(1024))) +
            rec(xreq('SEND_MIDDLE', SEL_XS1, data(1024))) +
            rec(xreq('SEND_LAST', SEL_XS0, data(8))) + deliver,
        'xrc-write-last-other-srq':
            rec(xreq('WRITE_FIRST', SEL_XS1, data(1024), reth=(0, MR4, 2048))) +
            rec(xreq('WRITE_LAST_IMM', SEL_XS0, data(1024), imm=True)) +
            deliver,
        # Switching SRQs between messages.
        'xrc-switch': send(SEL_XS0) + send(SEL_XS1) +
            rec(xreq('WRITE_ONLY_IMM', SEL_XS0, data(32), imm=True,
                     reth=(4096, MR0, 32))) +
            rec(xreq('WRITE_ONLY_IMM', SEL_XS1, data(32), imm=True,
                     reth=(4096, MR4, 32))) +
            send(SEL_XS0, 8) + rec(xreq('SEND_ONLY_INV', SEL_XS1, data(16),
                                        inv=True)) + deliver,
        # Another domain's SRQ, numbers that are no SRQ's (one is tgt's
        # own QPN on a fresh engine, one of another slot), a short XRCETH.
        'xrc-other-domain': send(SEL_XSB) + deliver + clock(100) + wire(),
        'xrc-unknown-srq': send(SEL_ASIS, srqn=0x004123) + wire() +
            send(SEL_ASIS, srqn=0x004006) + wire() +
            send(SEL_ASIS, srqn=0x00c007) + wire() +
            rec(bth(XRC | 0x04) + b'\x01\x00' + b'\0' * 4) + deliver,
        # SRQs of another process of the domain (slot 2): relayed there.
        'xrc-relay': send(SEL_ASIS, 100, srqn=0x008005) +
            rec(xreq('READ_REQ', SEL_ASIS, reth=(0, MR0, 64), srqn=0x00bfff)) +
            send(SEL_ASIS, srqn=0x008005, repeat=1) + send(SEL_XS0) + deliver,
        # Requests of another transport for tgt, an XRC one for rc1.
        'xrc-wrong-transport':
            rec(bth(0x04, dqpn=0x004006) + data(16) + b'\0' * 4,
                flag=T_KEEP, mode=0) +
            rec(xreq('SEND_ONLY', SEL_XS0, data(16)), flag=T_RC1) + deliver,
        # Receives run out (not replenished): RNR NAKs, then they resume.
        'xrc-rnr': clock(1, starve=True) +
            b''.join(send(SEL_XS0, 16) for _ in range(9)) +
            rec(xreq('WRITE_ONLY_IMM', SEL_XS0, data(16), imm=True,
                     reth=(0, MR0, 16))) + deliver + clock(200) + wire() +
            clock(1, starve=True) + clock(200) + deliver,
        # ... by ini's own traffic alone: its RNR retries, then success.
        'xrc-rnr-real': clock(1, starve=True) + wire() * 24 + clock(400) +
            wire() + clock(1, starve=True) + clock(400) + deliver,
        # READ with a key of the SRQ's PD, its repeat (replayed), one with
        # a key of the other SRQ's PD (access NAK).
        'xrc-read': rec(xreq('READ_REQ', SEL_XS0, reth=(1024, MR0, 2048))) +
            rec(xreq('READ_REQ', SEL_XS0, reth=(1024, MR0, 2048)),
                mode=M_PSN_PREV | M_KEYS) +
            rec(xreq('READ_REQ', SEL_XS1, reth=(1024, MR0, 512))) + deliver,
        # A repeated READ naming the other SRQ: its key is checked against
        # that SRQ's PD (no answer).
        'xrc-read-replay-other-pd':
            rec(xreq('READ_REQ', SEL_XS1, reth=(0, MR4, 3000))) +
            rec(xreq('READ_REQ', SEL_XS0, reth=(0, MR4, 3000)),
                mode=M_PSN_PREV | M_KEYS) +
            rec(xreq('READ_REQ', SEL_XS1, reth=(0, MR4, 3000)),
                mode=M_PSN_PREV | M_KEYS) + deliver,
        'xrc-atomic': rec(xreq('FETCH_ADD', SEL_XS1,
                               atomic=(256, MR4, 5, 0))) +
            rec(xreq('CMP_SWAP', SEL_XS0, atomic=(264, MR0, 7, 0))) +
            rec(xreq('CMP_SWAP', SEL_XS0, atomic=(264, MR0, 7, 0)),
                mode=M_PSN_PREV | M_KEYS) +
            rec(xreq('FETCH_ADD', SEL_XS0, atomic=(256, MR4, 1, 0))) +
            deliver,
        'xrc-write': rec(xreq('WRITE_FIRST', SEL_XS0, data(1024),
                              reth=(8192, MR0, 3072))) +
            rec(xreq('WRITE_MIDDLE', SEL_XS0, data(1024))) +
            rec(xreq('WRITE_LAST', SEL_XS0, data(1024))) +
            rec(xreq('WRITE_ONLY', SEL_XS1, data(64), reth=(8192, MR0, 64))) +
            deliver,
        # Duplicates: delivered thrice (re-ACKed), one PSN back, ahead.
        'xrc-dup': send(SEL_XS0, repeat=2) +
            rec(xreq('SEND_ONLY', SEL_XS1, data(16)),
                mode=M_PSN_PREV) +
            rec(xreq('SEND_ONLY', SEL_XS1, data(16))[:11] + b'\x05' +
                xreq('SEND_ONLY', SEL_XS1, data(16))[12:], mode=M_PSN_REL) +
            deliver,
        # XS1 leaves mid-message (its WQE flushed, the rest NAKed), comes
        # back under a new number.
        'xrc-srq-toggle':
            rec(xreq('SEND_FIRST', SEL_XS1, data(1024))) +
            clock(1, toggle_xs1=True) +
            rec(xreq('SEND_LAST', SEL_XS1, data(16))) + deliver +
            clock(1, toggle_xs1=True) + send(SEL_XS1) + deliver,
        'xrc-srq-toggle-write':
            rec(xreq('WRITE_FIRST', SEL_XS1, data(1024), reth=(0, MR4, 2048))) +
            clock(1, toggle_xs1=True) +
            rec(xreq('WRITE_LAST', SEL_XS1, data(1024))) + deliver,
        # A repeated READ naming an SRQ gone since, or another domain's.
        'xrc-read-replay-gone':
            rec(xreq('READ_REQ', SEL_XS1, reth=(0, MR4, 1024))) +
            clock(1, toggle_xs1=True) +
            rec(xreq('READ_REQ', SEL_XS1, reth=(0, MR4, 1024)),
                mode=M_PSN_PREV | M_KEYS) +
            rec(xreq('READ_REQ', SEL_XSB, reth=(0, MR0, 1024)),
                mode=M_PSN_PREV | M_KEYS) + clock(2000) + deliver,
        'xrc-srq-toggle-real': wire(3) + clock(1, toggle_xs1=True) +
            deliver + clock(100) + clock(1, toggle_xs1=True) + deliver,
        # Answers to ini: ACKs of what it sent, NAKs, READ responses.
        'xrc-ini-ack': wire(2, 1) + rec(xresp('ACK')) +
            rec(xresp('ACK')[:11] + b'\x04' + xresp('ACK')[12:],
                mode=M_PSN_REL) + deliver,
        'xrc-ini-rnr': rec(xresp('ACK', 0x21)) + clock(20) + deliver,
        'xrc-ini-nak-seq': rec(xresp('ACK', 0x60)) + deliver +
            rec(xresp('ACK', 0x60)) + clock(100) + wire(),
        'xrc-ini-nak-access': rec(xresp('ACK', 0x62)) + deliver,
        'xrc-ini-nak-invalid': wire(4, 1) + rec(xresp('ACK', 0x61)) + deliver,
        'xrc-ini-read-resp': wire(0, 1) +
            rec(xresp('ACK')[:11] + b'\x05' + xresp('ACK')[12:],
                mode=M_PSN_REL) +
            rec(xresp('READ_RESP_FIRST', payload=data(1024))) +
            rec(xresp('READ_RESP_MIDDLE', payload=data(1024))) +
            rec(xresp('READ_RESP_LAST', payload=data(1024))) +
            rec(xresp('READ_RESP_ONLY', payload=data(904))) +
            rec(xresp('ATOMIC_ACK', orig=42)) + clock(2000) + deliver,
        'xrc-ini-atomic-ack': rec(xresp('ATOMIC_ACK', orig=7)) + deliver,
        # Real traffic with losses, copies and a timeout, receives short.
        'xrc-wire-storm': wire(5, 2) + wire(2, 3) + wire(3, 1) +
            clock(1, starve=True) + wire() + clock(2000) + wire() +
            clock(1, starve=True) + clock(20000) + wire() + wire(),
    }
    for name, data_ in out.items():
        assert len(data_) <= MAX_INPUT, name
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    inputs = synthetic()
    inputs.update(xrc_inputs())
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
