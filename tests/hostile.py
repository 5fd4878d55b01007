"""Scripts a hostile kernel runs against the tool channel, shared by tests/attacks and the
benchmark in tests/bench (run them with ``runtime.execute_code``)."""

HUGE_LINE = """
import json, os, socket, time
size = {size}
sock = socket.socket(socket.AF_UNIX)
sock.connect(os.environ["HERMES_RPC_SOCKET"])
chunk = b"x" * (1 << 20)
start = time.perf_counter()
sent = 0
try:
    while sent < size:
        sock.sendall(chunk)
        sent += len(chunk)
    sock.sendall(b"\\n")
except OSError:
    pass
sock.settimeout(10)
data = b""
try:
    while not data.endswith(b"\\n"):
        more = sock.recv(65536)
        if not more:
            break
        data += more
except OSError:
    pass
print(json.dumps({{"elapsed": time.perf_counter() - start, "sent": sent, "reply": data.decode("utf-8", "replace")}}))
"""


def huge_line(size: int) -> str:
    """One connection, one request line of ``size`` bytes with its newline only at the end:
    the host must refuse it once it passes the cap. Sending stops at the first error (the host
    closed the connection). Prints ``{"elapsed", "sent", "reply"}`` as JSON."""
    return HUGE_LINE.format(size=size)
