import { z } from 'zod'

/**
 * How an adapter binding names an attribute of its own instance: a bare name, or a reference of
 * the model language (MODEL_LANGUAGE.md section 2) such as `#attr(temp)`, `$ext(temp)`,
 * `#out(temp)` or `$in(temp)`. Which form is written does not change what an adapter does: it
 * publishes the external value and writes the internal one (section 8). `$attr(temp)`, the
 * language's property reference, names the attribute too when its path is a bare attribute name
 * (the reference product's library models bind command topics that way); a dotted path such as
 * `$attr(timer.time)` is a runtime property, not an attribute, and stays refused.
 *
 * @example
 * referencedAttribute('#attr(temp)') // 'temp'
 * referencedAttribute('temp')        // 'temp'
 * referencedAttribute('#attr(a.b)')  // null: another instance's attribute
 */

const NAME = '[A-Za-z_][A-Za-z0-9_-]*'
const REFERENCE = new RegExp(`^\\s*(?:(?:\\$(?:in|out|ext|attr)|#(?:attr|in|internal|ext|external|out))\\(\\s*(${NAME})\\s*\\)|(${NAME}))\\s*$`)

/**
 * The attribute a binding reference names, or null when it is not a reference to an attribute
 * of the same instance.
 *
 * @example
 * referencedAttribute('$ext(flow)') // 'flow'
 * referencedAttribute('$attr(flow)') // 'flow'
 */
export function referencedAttribute(reference: string): string | null {
  const match = REFERENCE.exec(reference)
  if (!match) return null
  return match[1] ?? match[2] ?? null
}

/**
 * A binding's `attribute` field: the reference as written, parsed to the attribute's name. A
 * model check (model-schema.ts) then makes sure that name is declared.
 *
 * @example
 * attributeReferenceSchema.parse('#attr(temp)') // 'temp'
 */
export const attributeReferenceSchema = z
  .string()
  .max(256)
  .transform((reference, ctx) => {
    const name = referencedAttribute(reference)
    if (name === null) {
      ctx.addIssue({
        code: 'custom',
        message: `'${reference}' is not an attribute reference: write a name, #attr(name), $attr(name), #out(name), $in(name) or $ext(name) of this instance's attribute`,
      })
      return z.NEVER
    }
    return name
  })
