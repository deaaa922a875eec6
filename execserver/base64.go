package execserver

import (
	fastb64 "github.com/segmentio/asm/base64"
)

// appendBase64 is the wire.Base64Appender of the process notifications. It
// uses the SIMD encoder of segmentio/asm, about ten times faster than
// encoding/base64 on AVX2 machines: encoding is most of the CPU time of a
// pipe stream.
func appendBase64(b, data []byte) []byte {
	n := fastb64.StdEncoding.EncodedLen(len(data))
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n+16)
		copy(nb, b)
		b = nb
	}
	fastb64.StdEncoding.Encode(b[len(b):len(b)+n], data)
	return b[:len(b)+n]
}
