"""Storage: LanceDB for what is searched by vector or text, SQLite for transactional state."""
