package redissec

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSecurityDocMatchesCommands keeps docs/security.md's ready-to-paste
// lines equal to Commands (both the redis-cli prompt line and the quoted
// shell line for redis-cli --cluster call).
func TestSecurityDocMatchesCommands(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	prompt := ACLLine("rankgate", "CHANGE-ME", "rk", nil)
	if !strings.Contains(doc, "\n"+prompt+"\n") {
		t.Errorf("docs/security.md lacks the line\n%s", prompt)
	}
	var quoted []string
	for _, a := range cliArgs(SetUserArgs("rankgate", "CHANGE-ME", "rk", nil)) {
		quoted = append(quoted, shellQuote(a))
	}
	shell := "ACL SETUSER " + strings.Join(quoted, " ")
	if !strings.Contains(doc, "  "+shell+"\n") {
		t.Errorf("docs/security.md lacks the shell line\n%s", shell)
	}
	for _, c := range WaitCommands {
		if !strings.Contains(doc, "`+"+c+"`") {
			t.Errorf("docs/security.md does not say when to add +%s", c)
		}
	}
	for _, c := range OptionalCommands {
		if !strings.Contains(doc, "`"+strings.ReplaceAll(c, "|", `\|`)+"`") && !strings.Contains(doc, "`"+c+"`") {
			t.Errorf("docs/security.md does not name the optional grant %s", c)
		}
	}
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// TestCommandsAreSortedAndUnique keeps the list reviewable.
func TestCommandsAreSortedAndUnique(t *testing.T) {
	for i := 1; i < len(Commands); i++ {
		if Commands[i-1] >= Commands[i] {
			t.Errorf("Commands not sorted/unique at %q, %q", Commands[i-1], Commands[i])
		}
	}
	for _, c := range slices.Concat(OptionalCommands, notExercised) {
		if !strings.Contains(" "+strings.Join(Commands, " ")+" ", " "+c+" ") {
			t.Errorf("%s is not in Commands", c)
		}
	}
}
