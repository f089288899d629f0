import { expect, test } from 'vitest'
import { add } from './calc'

test('adds more', () => {
  expect(add(2, 3)).toBe(5)
})
