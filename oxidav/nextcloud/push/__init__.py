"""The push protocol, server side: seed and keep up a large tree fast
(docs/push-protocol.md). ``need`` (which chunks the server lacks, scoped to the caller's own
content), ``chunks`` (many BLAKE3-verified chunks in one request), ``commit`` (many files made
from chunk lists or small inline contents, each placed and authorized by ``oxidav.authz.writes``
and written with ``oxidav.tree.write_file`` as a PUT is). The client is ``oxidav.push``.
"""
