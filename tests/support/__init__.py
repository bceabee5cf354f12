"""Everything the tests share, imported as ``tests.support.<module>`` (tests/test_test_layout.py
keeps it so): live servers and the command line (``live``, ``cli``), real clients and peers
(``litmus``, ``rclone``, ``nginx``, ``nextcloud_sync``, ``carddav_client``, ``raw_http``,
``tls``, ``postgres``), recorders (``engine_events``, ``threads``), per-room data and builders
(``files``, ``tree``, ``grants``, ``blobs``, ``calendar_samples``, ``cal_dataset``,
``contacts_samples``, ``nextcloud``, ``public_links``, ``share_bits``, ``shared_collections``),
the fuzz and soak machinery (``fuzz``, ``xml_bodies``, ``soak/``)."""
