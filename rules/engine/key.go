package engine

import (
	"strconv"

	"github.com/guardd/guardd/characteristics"
)

// keyEnd ends each characteristic value in a rule's key bytes: the values of
// the rule's characteristics in order, each followed by keyEnd. It never
// occurs in UTF-8, so a value cannot hide a boundary.
const keyEnd = 0xff

// AppendKey appends c's value in ev, ended, to a rule's key bytes.
func AppendKey(key []byte, c characteristics.Characteristic, ev *characteristics.Event) []byte {
	return append(c.AppendValue(key, ev), keyEnd)
}

// appendKey is AppendKey for a value ev may lack: ok is false, and key
// unchanged, when c is absent from ev. It reads each value once where
// Present and AppendKey would read it twice, and formats it as
// Characteristic.AppendValue does (TestAppendKeyAsAppendValue).
func appendKey(key []byte, c characteristics.Characteristic, ev *characteristics.Event) (_ []byte, ok bool) {
	switch c.Kind() {
	case characteristics.KindAddr: // ip.src: AppendValue formats ev.IP
		if !ev.IP.IsValid() {
			return key, false
		}
		return append(ev.IP.AppendTo(key), keyEnd), true
	case characteristics.KindPrefix: // ip.src.prefix: ev.Prefix
		if !ev.Prefix.IsValid() {
			return key, false
		}
		return append(ev.Prefix.AppendTo(key), keyEnd), true
	case characteristics.KindNumber: // no number is read as text
		f, ok := c.Num(ev)
		if !ok {
			return key, false
		}
		return append(strconv.AppendFloat(key, f, 'f', -1, 64), keyEnd), true
	}
	s, ok := c.Str(ev)
	if !ok {
		return key, false
	}
	return append(append(key, s...), keyEnd), true
}

// AppendKeyValue appends the value v, ended, to a rule's key bytes: the
// bytes AppendKey makes from an event whose characteristic has value v.
func AppendKeyValue(key []byte, v string) []byte {
	return append(append(key, v...), keyEnd)
}

// NextKeyValue splits a rule's key bytes into the first value and the rest,
// the inverse of AppendKey; a last value without its end is taken whole.
func NextKeyValue(key []byte) (value, rest []byte) {
	i := 0
	for i < len(key) && key[i] != keyEnd {
		i++
	}
	value = key[:i]
	if i < len(key) {
		i++
	}
	return value, key[i:]
}
