import { describe, expect, it } from 'vitest'
import { add, sub } from './calc'

describe('add', () => {
  it('adds two numbers', () => {
    expect(add(1, 2)).toBe(3)
  })
  describe('with zero (edge)', () => {
    it('keeps the number', () => {
      expect(add(5, 0)).toBe(5)
    })
  })
})

describe('sub', () => {
  it('subtracts', () => {
    expect(sub(3, 1)).toBe(2)
  })
  it.skip('later', () => {})
})

it('adds two numbers', () => {
  expect(add(2, 2)).toBe(4)
})
