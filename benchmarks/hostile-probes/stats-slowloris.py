import asyncio, sys, time
host, port, n, every, dur = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
async def one():
    end = time.time() + dur
    while time.time() < end:
        try:
            r, w = await asyncio.open_connection(host, port)
            w.write(b"GET /stats HTTP/1.1\r\nHost: x\r\n"); await w.drain()
            while time.time() < end:
                await asyncio.sleep(every)
                w.write(b"X-Slow: 1\r\n"); await w.drain()
                if r.at_eof(): break
                try:
                    d = await asyncio.wait_for(r.read(1), 0.001)
                    if not d: break
                except asyncio.TimeoutError: pass
            w.close()
        except Exception:
            await asyncio.sleep(0.05)
async def main():
    await asyncio.gather(*[one() for _ in range(n)])
asyncio.run(main())
