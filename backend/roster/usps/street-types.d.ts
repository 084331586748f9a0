// The street-types package ships Publication 28 Appendix C1 as plain CommonJS without type declarations.
declare module "street-types" {
  interface StreetType {
    readonly suffix: string
    readonly abbrs: ReadonlyArray<string>
    readonly standardAbbr: string
  }
  const streetTypes: ReadonlyArray<StreetType>
  export = streetTypes
}
