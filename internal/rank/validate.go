package rank

import "unicode/utf8"

// Identifier rules (api/openapi.yaml). Nothing that passes them can inject '{',
// '}', ':' or control bytes into a key.

// ValidFamily: [a-z0-9_-]{1,32}.
func ValidFamily(s string) bool { return validRunes(s, 32, familyByte) }

// ValidMember: [A-Za-z0-9_.@-]{1,64}.
func ValidMember(s string) bool { return validRunes(s, 64, memberByte) }

// ValidDimValue: [A-Za-z0-9_.-]{1,64}.
func ValidDimValue(s string) bool { return validRunes(s, 64, dimValueByte) }

// ValidDimType: [a-z0-9_]{1,32}.
func ValidDimType(s string) bool { return validRunes(s, 32, dimTypeByte) }

// ValidEventID: [A-Za-z0-9_.:@/-]{1,128}. Event ids are hash fields, never
// key parts, so ':' and '/' are allowed.
func ValidEventID(s string) bool { return validRunes(s, 128, eventByte) }

func validRunes(s string, max int, ok func(byte) bool) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) bool { return c >= 'a' && c <= 'z' }
func upper(c byte) bool { return c >= 'A' && c <= 'Z' }
func digit(c byte) bool { return c >= '0' && c <= '9' }

func familyByte(c byte) bool  { return lower(c) || digit(c) || c == '_' || c == '-' }
func dimTypeByte(c byte) bool { return lower(c) || digit(c) || c == '_' }
func memberByte(c byte) bool {
	return lower(c) || upper(c) || digit(c) || c == '_' || c == '.' || c == '@' || c == '-'
}
func dimValueByte(c byte) bool {
	return lower(c) || upper(c) || digit(c) || c == '_' || c == '.' || c == '-'
}
func eventByte(c byte) bool { return memberByte(c) || c == ':' || c == '/' }

// Printable reports whether s is valid UTF-8 with no control character
// (below U+0020, or U+007F): free text such as operators, reasons and names.
func Printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
