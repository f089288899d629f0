import { expect, test } from 'vitest'
import { old } from './old'

test('old', () => {
  expect(old()).toBe(1)
})
