package wire

// MinSharedSecretBytes is the shortest shared secret of signed bearer
// tokens (`--ws-auth signed-bearer-token`, docs/protocol.md §1.3) that the
// server's verifier accepts and the client mints with (after surrounding
// whitespace is trimmed): 256 bits, the size of an HS256 key.
const MinSharedSecretBytes = 32
