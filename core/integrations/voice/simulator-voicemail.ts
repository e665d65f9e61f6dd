// What the simulator reports for a number ending 7777: the call is picked up by a
// voicemail box, as Retell reports it — call_status "ended", disconnection_reason
// "voicemail_reached", call_analysis.in_voicemail true, call_successful false, and the greeting
// the agent heard as the transcript.

export const reachesVoicemail = (toNumber: string): boolean => toNumber.endsWith('7777');

export function simulateVoicemail(beginMessage: string): {
  transcript: string;
  call_analysis: Record<string, unknown>;
} {
  const greeting =
    "Hi, you've reached my voicemail. I can't take your call right now. Please leave a message after the tone.";
  return {
    transcript: `Agent: ${beginMessage}\nUser: ${greeting}\n`,
    call_analysis: {
      call_summary: 'The call reached a voicemail greeting; no conversation took place.',
      user_sentiment: 'Unknown',
      call_successful: false,
      in_voicemail: true,
      custom_analysis_data: {},
    },
  };
}
