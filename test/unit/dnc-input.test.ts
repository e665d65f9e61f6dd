// What a firm sends to its do-not-call list (core/domain/compliance/dnc-input.ts): numbers read as
// the rest of the service reads them, a CSV's phone column found by its header, each bad row
// named by its line in the file (a quoted cell spanning lines included), limits as 413.
import { describe, expect, it } from 'vitest';
import { readCsvPhones, readPhones } from '../../core/domain/compliance/dnc-input.js';
import { AppError } from '../../core/platform/errors.js';

describe('readPhones', () => {
  it('reads E.164 and national numbers, and names the invalid ones by position', () => {
    expect(readPhones(['+442071234567', '020 7123 4568', 'x'], 'GB')).toEqual({
      phones: ['+442071234567', '+442071234568'],
      invalid: [{ at: 2, value: 'x', reason: expect.stringContaining('not a valid phone number') }],
    });
  });

  it('reads every number create-outbound-call may dial, possible but not valid ones too (+1 555, +44 7700 900)', () => {
    // A number the service may call must be one the firm can list, in the array and in a CSV.
    expect(readPhones(['+15555550000', '(555) 555-0123', '+447700900123', '555-0123'], 'US')).toEqual({
      phones: ['+15555550000', '+15555550123', '+447700900123'],
      invalid: [{ at: 3, value: '555-0123', reason: expect.stringContaining('not a valid phone number') }],
    });
    expect(readCsvPhones('phone\n+15555550000\n', 'US').phones).toEqual(['+15555550000']);
  });

  it('refuses more than 5,000 numbers with 413 too_many_rows', () => {
    const run = () => readPhones(Array(5001).fill('+12125550100'), 'US');
    expect(run).toThrow(AppError);
    expect(run).toThrow(expect.objectContaining({ status: 413, code: 'too_many_rows' }));
  });
});

describe('readCsvPhones', () => {
  it('finds the phone column by its header, in any case', () => {
    expect(readCsvPhones('Name,PHONE NUMBER\nAnn,+12125550100\n', 'US').phones).toEqual(['+12125550100']);
  });

  it('reads the first column when the first row is not a header', () => {
    expect(readCsvPhones('+12125550100,a\n2125550101,b\n', 'US')).toEqual({
      rows: 2,
      phones: ['+12125550100', '+12125550101'],
      invalid: [],
    });
  });

  it('names a bad row by the line it starts on, after a quoted cell spanning lines', () => {
    const csv = 'phone,note\n+12125550100,"two\nlines"\nnope,x\n';
    expect(readCsvPhones(csv, 'US').invalid).toEqual([
      { at: 4, value: 'nope', reason: expect.stringContaining('not a valid phone number') },
    ]);
  });

  it('refuses a CSV that cannot be parsed with a 400 naming /csv', () => {
    expect(() => readCsvPhones('phone\n"+12125550100\n', 'US')).toThrow(
      expect.objectContaining({ status: 400, details: [{ path: '/csv', message: 'is not valid CSV' }] }),
    );
  });
});
