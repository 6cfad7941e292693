"""DMF Watch: a daily watch on the MFDS drug-master-file (원료의약품 등록) registry."""
