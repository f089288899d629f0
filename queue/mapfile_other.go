//go:build !linux

package queue

// MapFile gives the bytes of a queue file for a command that only reads them. Here it reads
// the file (see the Linux version).
func MapFile(path string) (src []byte, release func(), err error) {
	src, err = ReadFile(path)
	return src, func() {}, err
}
