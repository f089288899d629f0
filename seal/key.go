package seal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// keySize is the length of a key in bytes.
const keySize = 32

// ErrKeyExposed means the key file can be read (or written) by users other than its owner,
// or is not a plain file of the right size: it is not used.
var ErrKeyExposed = errors.New("the orchestrator's key is not private")

// A Key seals and checks records. Its zero value is not usable: get one from [User], [Load]
// or [New].
type Key struct {
	path   string
	secret []byte
}

// Path returns the file the key was read from ("" for a key made by [New]).
func (k *Key) Path() string { return k.path }

// New returns a fresh random key that is kept nowhere: for tests, and for records that need
// not outlive the process.
func New() (*Key, error) {
	secret := make([]byte, keySize)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("seal: new key: %w", err)
	}
	return &Key{secret: secret}, nil
}

// UserPath returns where the person's key lives: $XDG_CONFIG_HOME/orchestrator/key when
// XDG_CONFIG_HOME is set, else the user's configuration folder (os.UserConfigDir, that is
// ~/.config on Linux) then orchestrator/key.
func UserPath() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		var err error
		if dir, err = os.UserConfigDir(); err != nil {
			return "", fmt.Errorf("seal: where to keep the key: %w", err)
		}
	}
	return filepath.Join(dir, "orchestrator", "key"), nil
}

// users caches the keys User loaded, by path: the key of a path never changes while the
// process runs (a key made anew would make every sealed record fail).
var users sync.Map // path -> *Key

// User returns the person's key (UserPath), made on first use. It is read once per
// process.
func User() (*Key, error) {
	path, err := UserPath()
	if err != nil {
		return nil, err
	}
	if k, ok := users.Load(path); ok {
		return k.(*Key), nil
	}
	k, err := Load(path)
	if err != nil {
		return nil, err
	}
	got, _ := users.LoadOrStore(path, k)
	return got.(*Key), nil
}

// Load reads the key at path, making it first when there is none: 32 random bytes, mode
// 0600, in a folder made with mode 0700. Two processes that start at once agree on one key:
// each writes its own temporary file and links it to path, which never replaces a key that
// is there; the one that loses reads the winner's. A key that others may read or write, or
// that is not a plain file of 32 bytes, is refused with an error matching ErrKeyExposed.
func Load(path string) (*Key, error) {
	k, err := read(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := create(path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("seal: make the key %s: %w", path, err)
	}
	return read(path)
}

// read reads and checks the key file at path.
func read(path string) (*Key, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("seal: read the key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("seal: read the key: %w", err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%w: %s is not a plain file", ErrKeyExposed, path)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("%w: %s has mode %04o, so other users may read it and seal anything; remove it (a new key is made, and what the old one sealed is no longer evidence) or make it private: chmod 600 %s",
			ErrKeyExposed, path, fi.Mode().Perm(), path)
	case fi.Size() != keySize:
		return nil, fmt.Errorf("%w: %s holds %d bytes, not %d; remove it and a new key is made", ErrKeyExposed, path, fi.Size(), keySize)
	}
	secret := make([]byte, keySize)
	if _, err := io.ReadFull(f, secret); err != nil {
		return nil, fmt.Errorf("seal: read the key: %w", err)
	}
	return &Key{path: path, secret: secret}, nil
}

// create makes a new key at path unless one is there (then it returns an error matching
// fs.ErrExist). The key is complete before it has its name: written and synced under a
// temporary name, then hard-linked to path, which fails rather than replace another.
func create(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	secret := make([]byte, keySize)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(secret); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Link(tmp, path)
}

// Sum returns the seal of content as a record of kind: the hex HMAC-SHA256 of the kind's
// domain string and the content. A nil key seals nothing: "".
func (k *Key) Sum(kind string, content []byte) string {
	if k == nil {
		return ""
	}
	m := hmac.New(sha256.New, k.secret)
	io.WriteString(m, "orchestrator seal v1\x00"+kind+"\x00")
	m.Write(content)
	return hex.EncodeToString(m.Sum(nil))
}

// Check reports whether sum is the seal of content as a record of kind. With a nil key
// (none could be read) nothing is.
func (k *Key) Check(kind string, content []byte, sum string) bool {
	if k == nil {
		return false
	}
	want, err := hex.DecodeString(sum)
	if err != nil || len(want) != sha256.Size {
		return false
	}
	got, _ := hex.DecodeString(k.Sum(kind, content))
	return hmac.Equal(got, want)
}
