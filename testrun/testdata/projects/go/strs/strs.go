// Package strs is a fixture of the testrun tests.
package strs

import "strings"

// Upper upper-cases.
func Upper(s string) string { return strings.ToUpper(s) }
