// How the answer to an intake question is read, decided by the question's key.
import type { CountryCode } from '../contact-points/phones.js';
import { findPhone } from '../contact-points/phones.js';
import { readEmailAnswer } from '../contact-points/emails.js';
import { extractName } from './names.js';

export type QuestionKind = 'name' | 'phone' | 'email' | 'case_type' | 'text';

export function questionKind(key: string): QuestionKind {
  const k = key.toLowerCase();
  if (/e_?mail/.test(k)) return 'email';
  if (/phone|mobile|cell|telephone|callback/.test(k)) return 'phone';
  if (/^(?:full_name|name|client_name|caller_name|contact_name|your_name)$/.test(k)) return 'name';
  if (/^(?:case_type|matter_type|practice_area|legal_issue|legal_matter|case_category)$/.test(k)) {
    return 'case_type';
  }
  return 'text';
}

/** Keys of a text question whose answer describes the matter (the summary quotes it). */
export const DESCRIPTION_KEY =
  /description|details|what_happened|incident|situation|summary|story|issue|problem/;

/**
 * Reads the answer to a question of the given kind: a valid phone (E.164), an email, a name,
 * or the trimmed text; null when the reply does not contain a usable answer.
 */
export function readAnswer(kind: QuestionKind, text: string, country: CountryCode = 'US'): string | null {
  switch (kind) {
    case 'phone':
      return findPhone(text, country);
    case 'email':
      return readEmailAnswer(text);
    case 'name':
      return extractName(text, { bare: true });
    case 'case_type':
    case 'text': {
      const trimmed = text.trim();
      return trimmed === '' ? null : trimmed;
    }
  }
}
