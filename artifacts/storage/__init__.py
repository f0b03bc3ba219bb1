"""Where blobs live: content-addressed writes (``blobs``), the local file storage
(``local``), S3 Object Lock for escrow (``object_lock``), bulk row inserts
(``bulk``)."""
