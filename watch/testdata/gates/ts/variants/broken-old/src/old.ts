export function old(): number {
  return 2
}
