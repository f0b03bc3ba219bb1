"""Evidence packages (docs/architecture.md): ``layout`` (names and encodings both sides
share), ``zipstream`` (a zip written as it is sent), ``verify`` (the offline
checker behind ``reprogate evidence verify``) — these three use nothing but the
standard library, ``cryptography`` and the pure ``artifacts`` modules — and
``package`` (the server side: what goes in, streamed from storage)."""
