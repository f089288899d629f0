// A fixture of the testrun tests: some of its tests pass, some fail.
export function add(a: number, b: number): number {
  return a + b
}

export function sub(a: number, b: number): number {
  return a + b // wrong on purpose
}
