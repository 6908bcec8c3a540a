#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench/wire_fingerprint.py: what a capture's RoCEv2 packets say, per flow,
decoded by tshark (not by urxe's own decoder: this is the oracle that tells
whether two builds put the same packets on the wire).

  wire_fingerprint.py [--acks msn|exact] [--hist] CAPTURE...

A flow is a source address and a destination QPN.  Flows and addresses are
named by the order they first appear in (A1>Q2: the first source address,
to the second QPN seen), so that two runs whose addresses or QPNs differ
(another runtime directory, another slot) still compare; the raw values
are on the '#' lines, which a comparison ignores.

Default: per flow, each packet in order: the opcode's name, the PSN
relative to the flow's first (requests and responses apart: a
flow carries one side's requests and its responses to the other's), the
AckReq bit, the RETH's length, the
AETH's syndrome and MSN, the immediate, the atomic operands or the
original data, the payload's length and a hash of its bytes, and the mark
URXE_PCAP's comment puts on a frame URXE_FAULTS touched (a dropped one
put back where its PSN goes, see undrop()).  Not the time,
the IPv4 ID, checksums, UDP ports, the RETH's address and key (they
differ from run to run).  Plain ACKs (opcode Acknowledge, syndrome ACK)
are timing: the responder coalesces those asked for in one receive batch,
so their number varies, and so does which of the ACKs asked for in the
middle of a message are sent.  With --acks msn (the default) they are
left out of the sequence and listed after it, one line per MSN with the
PSN of the first ACK that carries it: the ACK of the message's last
packet, which a workload that waits for each completion always draws
(bench/wire_compare.sh's urxe_fixedflow).  --acks exact puts every ACK
in the sequence.

--hist: per flow, a histogram of (opcode, payload length), for captures
of two processes whose runs are not packet-for-packet alike (perftest).

Where a capture has directions (URXE_PCAP's pcapng), only the outbound
copies count: a process that talks to itself records each packet twice.
Several files are read as one (tshark in each; frames in time order).

Exit: 0, or 2 when a capture cannot be read or a packet's headers and
payload do not add up to its UDP length (tshark did not decode it whole).
"""
import argparse
import collections
import hashlib
import subprocess
import sys

FIELDS = [
    "frame.number", "frame.time_epoch", "frame.packet_flags_direction",
    "frame.comment", "ip.src", "ipv6.src", "udp.length", "udp.payload",
    "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
    "infiniband.bth.a", "infiniband.bth.padcnt",
    "infiniband.rdeth", "infiniband.deth", "infiniband.reth",
    "infiniband.reth.dmalen", "infiniband.atomiceth",
    "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
    "infiniband.aeth", "infiniband.aeth.syndrome", "infiniband.aeth.msn",
    "infiniband.atomicacketh", "infiniband.atomicacketh.origremdt",
    "infiniband.immdt", "infiniband.ieth",
]
# Extended header -> length in bytes (IBA 9.3); BTH is 12, ICRC 4.
EXT = {"infiniband.rdeth": 4, "infiniband.deth": 8, "infiniband.reth": 16,
       "infiniband.atomiceth": 28, "infiniband.aeth": 4,
       "infiniband.atomicacketh": 8, "infiniband.immdt": 4,
       "infiniband.ieth": 4}
TRANSPORTS = {0: "RC", 1: "UC", 2: "RD", 3: "UD", 4: "CNP", 5: "XRC"}
OPS = ["SEND_FIRST", "SEND_MIDDLE", "SEND_LAST", "SEND_LAST_IMM",
       "SEND_ONLY", "SEND_ONLY_IMM", "WRITE_FIRST", "WRITE_MIDDLE",
       "WRITE_LAST", "WRITE_LAST_IMM", "WRITE_ONLY", "WRITE_ONLY_IMM",
       "READ_REQUEST", "READ_RESP_FIRST", "READ_RESP_MIDDLE",
       "READ_RESP_LAST", "READ_RESP_ONLY", "ACK", "ATOMIC_ACK",
       "CMP_SWAP", "FETCH_ADD", "RESYNC", "SEND_LAST_INV", "SEND_ONLY_INV"]
NAK_CODES = {0: "PSN_SEQ_ERR", 1: "INV_REQ", 2: "REM_ACCESS_ERR",
             3: "REM_OP_ERR", 4: "INV_RD_REQ"}
FAULT_MARKS = (("dropped", "drop"), ("duplicate", "dup"),
               ("reorder", "reorder"), ("corrupt", "corrupt"))


def opname(op):
    t = TRANSPORTS.get(op >> 5)
    low = op & 31
    if t is None or low >= len(OPS):
        return "OP_0x%02x" % op
    return "%s_%s" % (t, OPS[low])


def syndrome(s):
    """The AETH syndrome as IBA 9.7.5.1.3 names it (credits left out:
    they say how much receive queue is left, which the fingerprint does
    keep as a number)."""
    kind = s >> 5 & 3
    if kind == 0:
        return "ack/c%d" % (s & 31)
    if kind == 1:
        return "rnr/t%d" % (s & 31)
    if kind == 3:
        return "nak/%s" % NAK_CODES.get(s & 31, "code%d" % (s & 31))
    return "reserved/%d" % (s & 31)


def run_tshark(path, payloads=True):
    cmd = ["tshark", "-n", "-r", path, "-d", "udp.port==4791,infiniband",
           "-Y", "infiniband.bth", "-T", "fields", "-E", "separator=\t",
           "-E", "occurrence=f"]
    for f in FIELDS:
        cmd += ["-e", f if payloads or f != "udp.payload" else "frame.marked"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        sys.stderr.write("wire_fingerprint: tshark failed on %s: %s\n"
                         % (path, p.stderr.strip()))
        sys.exit(2)
    rows = []
    for line in p.stdout.splitlines():
        v = line.split("\t")
        v += [""] * (len(FIELDS) - len(v))
        rows.append(dict(zip(FIELDS, v)))
    return rows


def num(s, default=0):
    if s == "":
        return default
    return int(s, 0)


def decode(r, where, payloads=True):
    """One packet: its flow's raw key and what the fingerprint says of it
    (without @payloads, its length only: histograms of big captures)."""
    op = num(r["infiniband.bth.opcode"])
    hdr = 12 + sum(n for f, n in EXT.items() if r[f])
    if payloads:
        udp = bytes.fromhex(r["udp.payload"].replace(":", ""))
    else:
        udp = bytes(max(num(r["udp.length"]) - 8, 0))
    pad = num(r["infiniband.bth.padcnt"])
    if len(udp) + 8 != num(r["udp.length"]) or hdr + pad + 4 > len(udp):
        sys.stderr.write("wire_fingerprint: %s frame %s: headers (%d bytes), "
                         "pad and ICRC do not fit its UDP payload (%d): "
                         "tshark did not decode it\n"
                         % (where, r["frame.number"], hdr, len(udp)))
        sys.exit(2)
    payload = udp[hdr:len(udp) - 4 - pad]
    f = [opname(op), None]		# [1]: the relative PSN, filled in later
    if r["infiniband.bth.a"] in ("1", "True"):
        f.append("a")
    if r["infiniband.reth"]:
        f.append("dmalen=%d" % num(r["infiniband.reth.dmalen"]))
    if r["infiniband.aeth"]:
        f.append("%s msn=%d" % (syndrome(num(r["infiniband.aeth.syndrome"])),
                                num(r["infiniband.aeth.msn"])))
    if r["infiniband.immdt"]:
        f.append("imm=%s" % r["infiniband.immdt"].replace(":", ""))
    if r["infiniband.atomiceth"]:
        f.append("swap_add=%x cmp=%x" % (num(r["infiniband.atomiceth.swapdt"]),
                                         num(r["infiniband.atomiceth.cmpdt"])))
    if r["infiniband.atomicacketh"]:
        f.append("orig=%x" % num(r["infiniband.atomicacketh.origremdt"]))
    if payload or op & 31 not in (17, 18, 12, 19, 20):
        f.append("len=%d h=%s" % (len(payload),
                                  hashlib.sha256(payload).hexdigest()[:12]))
    comment = r["frame.comment"].lower()
    for word, mark in FAULT_MARKS:
        if word in comment:
            f.append("[%s]" % mark)
    src = r["ip.src"] or r["ipv6.src"]
    plain_ack = (op & 31) == 17 and r["infiniband.aeth"] and \
        num(r["infiniband.aeth.syndrome"]) >> 5 & 3 == 0
    return {"src": src, "dqpn": num(r["infiniband.bth.destqp"]),
            "psn": num(r["infiniband.bth.psn"]), "op": op, "f": f,
            "len": len(payload), "ack": bool(plain_ack),
            "msn": num(r["infiniband.aeth.msn"]),
            "aeth": num(r["infiniband.aeth.syndrome"]) if r["infiniband.aeth"]
            else None,
            "t": float(r["frame.time_epoch"] or 0), "n": num(r["frame.number"])}


def read_all(paths, payloads=True):
    pkts, inbound = [], 0
    for i, path in enumerate(paths):
        for r in run_tshark(path, payloads):
            # epb_flags direction: 1 inbound, 2 outbound; none in pcap.
            if num(r["frame.packet_flags_direction"]) == 1:
                inbound += 1
                continue
            p = decode(r, path, payloads)
            p["file"] = i
            pkts.append(p)
    if len(paths) > 1:
        pkts.sort(key=lambda p: (p["t"], p["file"], p["n"]))
    return pkts, inbound


class Names:
    """Numbers things by the order they first appear in."""

    def __init__(self, prefix):
        self.prefix, self.seen = prefix, {}

    def __call__(self, key):
        if key not in self.seen:
            self.seen[key] = "%s%d" % (self.prefix, len(self.seen) + 1)
        return self.seen[key]


def is_response(op):
    """READ responses, ACKs and atomic ACKs: in the PSN space of the
    requests they answer, not of the requests the same flow carries."""
    return 13 <= (op & 31) <= 18


def flows_of(pkts):
    addr, qpn = Names("A"), Names("Q")
    flows = collections.OrderedDict()
    for p in pkts:
        name = "%s>%s" % (addr(p["src"]), qpn(p["dqpn"]))
        fl = flows.setdefault(name, {"src": p["src"], "dqpn": p["dqpn"],
                                     "psn0": {}, "pkts": []})
        fl["psn0"].setdefault(is_response(p["op"]), p["psn"])
        fl["pkts"].append(p)
    return flows


def undrop(entries):
    """URXE_PCAP records a dropped packet when the injector drops it, ahead
    of the rest of its burst (recorded once the burst is sent): where it
    lands depends on how packets were batched, which is timing.  Put each
    back where its PSN goes in that burst: before the burst's next packet
    of its kind (request or response) with the same or a higher PSN (the
    same: its resend), or where the burst ends (the next packet going back
    to a lower PSN, a resend from there), whichever comes first."""
    out, held, last, sent = [], collections.defaultdict(list), {}, {}

    def flush(cls, pred):
        keep = []
        for h in sorted(held[cls], key=lambda h: h[0][1]):
            (out if pred(h) else keep).append(h)
        held[cls] = keep

    for e in entries:
        cls, rel, _, dropped = e
        n = sent.get(cls, 0)
        if dropped:
            held[cls].append((e, n))	# n: packets of its kind before it
            continue
        rewind = cls in last and rel <= last[cls]
        flush(cls, lambda h: h[0][1] <= rel or (rewind and h[1] < n))
        out.append((e, 0))
        last[cls], sent[cls] = rel, n + 1
    for cls in sorted(held):
        flush(cls, lambda h: True)
    return [h[0] for h in out]


def print_sequence(name, fl, acks):
    n_ack = sum(1 for p in fl["pkts"] if p["ack"])
    bases = ", ".join("%s 0x%06x" % ("response" if k else "request", v)
                      for k, v in sorted(fl["psn0"].items()))
    print("# flow %s = %s -> QPN 0x%06x, first PSN: %s; %d packets, "
          "%d plain ACKs" % (name, fl["src"], fl["dqpn"], bases,
                             len(fl["pkts"]), n_ack))
    print("flow %s" % name)
    first = collections.OrderedDict()	# MSN -> PSN of its first ACK
    entries = []
    for p in fl["pkts"]:
        cls = is_response(p["op"])
        rel = (p["psn"] - fl["psn0"][cls]) & 0xFFFFFF
        if p["ack"] and acks == "msn":
            first.setdefault(p["msn"], rel)
            continue
        f = list(p["f"])
        f[1] = "+%d" % rel
        entries.append((cls, rel, " ".join(f), "[drop]" in f))
    for e in undrop(entries):
        print("  " + e[2])
    if acks == "msn" and first:
        print("  acks (msn: psn of the first ACK carrying it)")
        for msn, rel in first.items():
            print("    msn=%d +%d" % (msn, rel))


def hist_key(p):
    """An opcode's name; for an Acknowledge, what its syndrome says."""
    name = opname(p["op"])
    if p["aeth"] is not None and p["op"] & 31 == 17:
        name += "/" + syndrome(p["aeth"]).split("/")[0]
    return name


def print_hist(name, fl):
    h = collections.Counter((hist_key(p), p["len"]) for p in fl["pkts"])
    print("# flow %s = %s -> QPN 0x%06x: %d packets"
          % (name, fl["src"], fl["dqpn"], len(fl["pkts"])))
    print("flow %s" % name)
    for (op, ln), c in sorted(h.items()):
        print("  %s len=%d %d" % (op, ln, c))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--acks", choices=("msn", "exact"), default="msn")
    ap.add_argument("--hist", action="store_true")
    ap.add_argument("captures", nargs="+")
    a = ap.parse_args()
    pkts, inbound = read_all(a.captures, not a.hist)
    print("# wire_fingerprint %s: %d RoCE packets (%d inbound copies "
          "skipped)" % (" ".join(a.captures), len(pkts), inbound))
    for name, fl in flows_of(pkts).items():
        if a.hist:
            print_hist(name, fl)
        else:
            print_sequence(name, fl, a.acks)


if __name__ == "__main__":
    main()
