/** A date as the API answers it (SPEC §0, MongoDB's extended JSON): epoch milliseconds under `$date`. */
export type EpochDate = {
  $date: number;
};
