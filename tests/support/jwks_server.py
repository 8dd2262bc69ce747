"""A JWKS endpoint on loopback for the secured OAUTHBEARER tests: http, or https with the shared test CA's server
certificate (localhost, 127.0.0.1). The document it serves can be replaced; reads are counted."""

from __future__ import annotations

import http.server
import ssl
import threading

from tests.support.tls_material import shared_tls_material


class JwksServer:
    def __init__(self, document: str, *, tls: bool = False) -> None:
        self.documents = [document]  # the last one is served
        self.reads = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.reads += 1
                body = owner.documents[-1].encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls:
            material = shared_tls_material()
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(material.server.cert_path, material.server.key_path)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        port = self._server.server_address[1]
        self.url = f"https://localhost:{port}/keys" if tls else f"http://127.0.0.1:{port}/keys"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
