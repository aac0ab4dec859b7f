#!/usr/bin/env python3
# tcp_forge.py IFACE DST DPORT SHIFT: waits for an outgoing TCP data
# segment to DST:DPORT on IFACE and sends a copy of it with 100 bytes of
# payload and its sequence number moved SHIFT ahead (far beyond any
# window). Prints the original and forged sequence numbers.
import socket, struct, sys, time

iface, dst, dport, shift = sys.argv[1], socket.inet_aton(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff

s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL: outgoing frames reach only these taps
s.bind((iface, 0))
s.settimeout(1)
deadline = time.time() + 10
while time.time() < deadline:
    try:
        f, addr = s.recvfrom(65535)
    except socket.timeout:
        continue
    if addr[2] != socket.PACKET_OUTGOING or len(f) < 54 or f[12:14] != b"\x08\x00":
        continue
    ip = f[14:]
    ihl = (ip[0] & 15) * 4
    if ip[9] != 6 or ip[16:20] != dst:
        continue
    tcp = ip[ihl:]
    doff = (tcp[12] >> 4) * 4
    if struct.unpack("!H", tcp[2:4])[0] != dport or struct.unpack("!H", ip[2:4])[0] <= ihl + doff:
        continue  # not a data segment of the flow
    seq = struct.unpack("!I", tcp[4:8])[0]
    nseq = (seq + shift) & 0xffffffff
    pay = b"\x55" * 100
    th = bytearray(tcp[:doff])
    th[4:8] = struct.pack("!I", nseq)
    th[16:18] = b"\0\0"
    iph = bytearray(ip[:ihl])
    iph[2:4] = struct.pack("!H", ihl + doff + 100)
    iph[10:12] = b"\0\0"
    iph[10:12] = struct.pack("!H", csum(bytes(iph)))
    pseudo = iph[12:20] + struct.pack("!BBH", 0, 6, doff + 100)
    th[16:18] = struct.pack("!H", csum(bytes(pseudo) + bytes(th) + pay))
    s.send(f[:14] + bytes(iph) + bytes(th) + pay)
    print("seq %d forged %d" % (seq, nseq))
    sys.exit(0)
print("no data segment seen")
sys.exit(1)
