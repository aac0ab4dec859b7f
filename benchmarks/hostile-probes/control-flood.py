import socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
conns = []
for i in range(n):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError as e:
        print("socket %d: %s" % (i, e)); break
    s.settimeout(0.5)
    try:
        s.connect(path)
    except Exception as e:
        print("connect %d: %s" % (i, e)); s.close(); break
    conns.append(s)
print("held", len(conns))
time.sleep(2)
for s in conns: s.close()
print("closed")
