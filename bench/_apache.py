"""Apache httpd with mod_dav / mod_dav_fs as a benchmark peer, from a temporary ServerRoot.

Debian's ``apache2`` binary, its event MPM with the stock thread and process defaults, only
the modules WebDAV needs (dav, dav_fs, authz_core, mime), anonymous, serving ``root``; the
lock database, pid file and logs live in the ServerRoot. Apache drops root to ``www-data``
for its children, so ``root`` is handed to that user. ``Server.process`` is the parent (the
children's memory is read through ``Server.serving_pids``).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench._files_servers import Server, _stop, _wait_for_port, free_port

MODULES = Path("/usr/lib/apache2/modules")
RUN_AS = "www-data"


def apache_available() -> bool:
    return shutil.which("apache2") is not None and (MODULES / "mod_dav_fs.so").exists()


def _config(server_root: Path, root: Path, port: int) -> str:
    modules = ("mpm_event", "authz_core", "dav", "dav_fs", "mime")
    loads = "\n".join(f"LoadModule {m}_module {MODULES}/mod_{m}.so" for m in modules)
    return f"""{loads}
ServerRoot "{server_root}"
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
PidFile "{server_root}/httpd.pid"
ErrorLog "{server_root}/error.log"
LogLevel warn
User {RUN_AS}
Group {RUN_AS}
TypesConfig /etc/mime.types
DavLockDB "{server_root}/locks/DavLock"
DocumentRoot "{root}"
<Directory "{root}">
    Dav On
    Require all granted
    AllowOverride None
    Options None
</Directory>
"""


@contextmanager
def apache_server(root: Path) -> Iterator[Server]:
    """Apache mod_dav serving ``root`` (made if missing) on a free port of 127.0.0.1."""
    server_root = root.parent / f"{root.name}-apache"
    (server_root / "locks").mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = server_root / "httpd.conf"
    config.write_text(_config(server_root, root, port))
    root.parent.chmod(0o755)  # a temporary folder is the owner's alone; the children must enter
    subprocess.run(["chown", "-R", f"{RUN_AS}:{RUN_AS}", str(root), str(server_root / "locks")])
    process = subprocess.Popen(
        ["apache2", "-f", str(config), "-DFOREGROUND"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={"PATH": "/usr/sbin:/usr/bin:/bin", "APACHE_RUN_DIR": str(server_root)},
    )
    try:
        _wait_for_port(port, process)
        yield Server("apache", process, port, "/", None)
    finally:
        _stop(process)
