// Package calc adds.
package calc
